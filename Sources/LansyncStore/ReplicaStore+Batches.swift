import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// A peer's batches: merged in one transaction each, their covers checked first; a peer's
// stream and its progress (Docs/PROTOCOL.md, "Streams").
extension ReplicaStore {
    /// ``FieldRefusal``, the name the store's own code uses.
    public typealias Refusal = FieldRefusal

    /// Merges a peer's batch in one write transaction (``BatchIntake``): ``PeerBatchTransaction``.
    public func receive(
        _ batch: DeltaBatch,
        stream: IncomingStream?,
        terms: BatchTerms
    ) throws(StoreError) -> ReceivedBatch {
        try PeerBatches(store: self).receiveBatch(batch, stream: stream, terms: terms)
    }

    /// `sender`'s stream is complete (its `done` came after every batch was applied): what its
    /// batches covered joins the version vector, in one transaction.
    ///
    /// - Parameter rejoinedAt: when the replica had last rejoined as the session said hello
    ///   (``rejoinedAt()``, read with its vector); if it rejoined since, nothing is recorded
    ///   (``StoreError/rejoinedSince(session:replica:)``), as for ``receive(_:from:incarnation:wallMilliseconds:refuse:revoked:writers:allowance:rejoinedAt:)``.
    public func completeStream(from sender: NodeID, rejoinedAt: UInt64? = nil) throws(StoreError) {
        // As for a peer's batches: what a lost commit held, the peer sends again.
        try guarded {
            try write(.resent) { tx, _ in
                if let rejoinedAt { try Self.requireNoRejoin(since: rejoinedAt, db: tx.db) }
                try tx.completeStream(from: sender)
                return .commit(())
            }
        }
    }

    /// Refuses, inside the transaction that would record a session's stream, a session that said
    /// hello before the replica last rejoined (`session`: its ``rejoinedAt()`` then). Its peer
    /// planned from the vector the replica held before the snapshot; progress recorded from it
    /// would let the next session resume past what the snapshot brought.
    static func requireNoRejoin(since session: UInt64, db: Database) throws {
        let now = try rejoinedAt(db: db)
        guard now == session else { throw StoreError.rejoinedSince(session: session, replica: now) }
    }

    /// What a session with `peer` starts from, read in one transaction: the version vector and the
    /// writers folded (its hello tells the one without the other), how far `peer`'s last stream
    /// got and its incarnation then, and when the replica last rejoined (every batch of the
    /// session is checked against it).
    public func sessionStart(with peer: NodeID) throws(StoreError) -> SessionStart {
        try read { db in
            SessionStart(
                vector: try Self.versionVector(db: db),
                folded: try Self.folded(db: db),
                resume: try Transaction.stream(db: db, from: peer),
                rejoinedAt: try Self.rejoinedAt(db: db)
            )
        }
    }

    /// How far `sender`'s interrupted stream got, and its incarnation then (for the hello).
    public func resume(from sender: NodeID) throws(StoreError) -> (covers: VersionVector, incarnation: NodeID)? {
        try guarded { try database.read { db in try Transaction.stream(db: db, from: sender) } }
    }

    /// `sender` said hello as `incarnation`: progress it made as another incarnation is dropped.
    public func meet(_ sender: NodeID, incarnation: NodeID) throws(StoreError) {
        try guarded {
            try database.write { db in
                try db.cachedStatement(sql: "DELETE FROM stream WHERE peer_id = ? AND incarnation <> ?").execute(
                    arguments: [sender.text, incarnation.text]
                )
            }
        }
    }
}

extension Transaction {
    /// Records what a batch covers: as `stream`'s progress (joining the version vector when the
    /// stream completes), or, for a batch of no stream, in the version vector at once.
    mutating func record(covers: VersionVector, of stream: (sender: NodeID, incarnation: NodeID)?) throws {
        if let stream {
            try recordStream(from: stream.sender, incarnation: stream.incarnation, covers: covers)
        } else {
            try raiseCounters(to: covers)
        }
    }

    /// `sender`'s stream is complete: what its batches covered joins the version vector.
    mutating func completeStream(from sender: NodeID) throws {
        guard let stream = try Transaction.stream(db: db, from: sender) else { return }
        try raiseCounters(to: stream.covers)
        try db.cachedStatement(sql: "DELETE FROM stream WHERE peer_id = ?").execute(arguments: [sender.text])
    }

    /// Raises each node's counter in the version vector to `covers`' where that is higher.
    mutating func raiseCounters(to covers: VersionVector) throws {
        for (node, counter) in covers.counters {
            // Two statements, not one nested in the other: `raiseCounter(of: try nodeRow(...))`
            // held a copy of the transaction (and of its node cache) while nodeRow grew the
            // cache, so every new node copied the whole cache.
            let row = try nodeRow(node)
            try raiseCounter(of: row, to: counter)
        }
    }
}

/// A peer's batch in this store: the writer check's reads, and the write transaction.
private struct PeerBatches: PeerBatchTransaction {
    typealias Rows = SQLiteRows
    let store: ReplicaStore

    func checkWriters(of batch: DeltaBatch, under terms: BatchTerms) throws(StoreError) -> WriterCheck {
        // (A damaged replica is refused by `write`, once.)
        try store.guarded {
            let check = try WriterCheck(batch, cache: store.nodeRows) { lookUp in try store.database.read(lookUp) }
            if !check.newWriters.isEmpty {
                try store.database.read { db in try check.check(terms.writers, allowance: terms.allowance, db: db) }
            }
            return check
        }
    }

    func withPeerBatch<T>(of stream: IncomingStream?, merge: BatchMerge<Rows>, _ body: Apply<T>) throws(StoreError) -> T
    {
        // A peer's batch may skip the fsync of its commit (Docs/STORAGE.md, "Durability"): the
        // sender keeps everything, and the stream's progress commits with the data.
        try store.guarded {
            try store.write(stream == nil ? .full : .resent) { tx, me in
                tx.origin = .peer
                let rows = SQLiteRows(tx: tx, lease: store.lease, nodeName: me.nodeName, signer: store.signing.current)
                var write = BatchWrite(rows: rows, merge: merge)
                let result = try body(&write)
                tx = write.rows.tx
                try tx.saveClock()
                return .commit(result)
            }
        }
    }
}

/// A peer's batch in this store's write transaction: the steps of ``BatchReceipt`` in its SQL.
extension SQLiteRows: BatchRows {
    func currentWriterID() throws -> NodeID { try tx.currentWriterID() }

    mutating func heldCounter(of writer: NodeID) throws -> UInt64 { try tx.heldCounter(of: writer) }

    func retireCurrentWriter() throws { try tx.retireCurrentWriter() }

    func writerCount() throws -> Int {
        // Rows are only ever added, so the largest row id counts them without a scan.
        try Int.fetchOne(tx.db, sql: "SELECT coalesce(max(id), 0) FROM node") ?? 0
    }

    func requireNoRejoin(since session: UInt64) throws { try ReplicaStore.requireNoRejoin(since: session, db: tx.db) }

    func held(of nodes: [NodeID]) throws -> VersionVector { try tx.versionVector(of: nodes) }

    mutating func merged(changed: Int) throws {
        // The writer's marker follows received changes too: a restore that loses them is a
        // rollback as much as one that loses local edits.
        tx.writerMarker = (try Transaction.currentWriter(db: tx.db), try tx.countChange())
    }

    mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws {
        try tx.record(covers: covers, of: stream.map { ($0.sender, $0.incarnation) })
        if let stream, stream.completes { try tx.completeStream(from: stream.sender) }
    }
}
