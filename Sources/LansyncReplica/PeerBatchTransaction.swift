package import LansyncCore

/// What a backend gives the one way a peer's batch is received
/// (``receiveBatch(_:stream:terms:)``): the writer check's reads before the write lock, and its
/// write transaction over its rows. Everything else (the order of the steps, what the batch is
/// merged under, what is told back) is written once, here and in ``BatchReceipt``.
package protocol PeerBatchTransaction {
    associatedtype Rows: BatchRows
    /// Checks the writers `batch` names against `terms` with reads, before the write lock: a
    /// batch refused here never takes it.
    func checkWriters(of batch: DeltaBatch, under terms: BatchTerms) throws(StoreError) -> WriterCheck
    /// Runs `body` over this backend's rows and `merge` for a batch of `stream`, in one write
    /// transaction, and commits what it did.
    func withPeerBatch<T>(of stream: IncomingStream?, merge: BatchMerge<Rows>, _ body: Apply<T>) throws(StoreError) -> T
}

extension PeerBatchTransaction {
    /// What runs in a peer batch's write transaction.
    package typealias Apply<T> = (inout BatchWrite<Rows>) throws -> T
}

extension PeerBatchTransaction {
    /// Merges a peer's batch in one write transaction (``BatchIntake``): its writers checked by
    /// reads first, then ``BatchReceipt``'s steps with ``BatchMerge`` over the backend's rows.
    package func receiveBatch(
        _ batch: DeltaBatch,
        stream: IncomingStream?,
        terms: BatchTerms
    ) throws(StoreError) -> ReceivedBatch {
        let check = try checkWriters(of: batch, under: terms)
        let receipt = BatchReceipt(batch, of: stream, checked: check, under: terms)
        let merge = BatchMerge<Rows>(
            refuse: terms.refuse,
            revoked: terms.revoked,
            wallMilliseconds: terms.wallMilliseconds
        )
        let (changed, version, refusedUnsigned) = try withPeerBatch(of: stream, merge: merge) { write in
            try receipt.apply(in: &write)
        }
        return ReceivedBatch(
            changed: changed,
            newWriters: check.newWriters.count,
            unverifiedCovers: check.unverifiedCovers,
            version: version,
            refusedUnsigned: refusedUnsigned
        )
    }
}
