package import LansyncCore

/// One peer batch received into a replica: the steps every backend takes, in one order, written
/// once (issue 65: the SQLite store and PostgreSQL each had their own copy, and the two had
/// drifted; the received-writes check of issue 64 goes here, before either backend sees a state).
///
/// Before the write lock the backend checks the batch's writers with reads (``WriterCheck``);
/// then, in its write transaction, ``apply(in:)``:
/// 1. the writers again (another session, or another relay process, may have brought some);
/// 2. a session that said hello before the replica last rejoined is refused
///    (``StoreError/rejoinedSince(session:replica:)``);
/// 3. a delta planned from a base the replica no longer holds is refused
///    (``StoreError/staleDelta(base:held:)``);
/// 4. a batch that has seen more of the replica's current writer than the replica holds retires
///    the writer (``WriterContinuity``): the replica was rolled back, and its next local write
///    must not reuse a dot;
/// 5. the field states merge (the backend's merge, through the core), and the signed runs its
///    proofs held are kept, to pass on with the versions;
/// 6. what the batch covers is recorded: a stream's progress (completing the stream with its last
///    batch), or, outside a stream, the version vector at once.
package struct BatchReceipt: Sendable {
    /// The stream a batch belongs to (``IncomingStream``).
    package typealias Stream = IncomingStream

    package let batch: DeltaBatch
    package let stream: Stream?
    /// The batch's writers as checked before the write lock (its covers cut to known writers).
    package let check: WriterCheck
    package let writers: WriterBounds
    /// How many writers may still be new in this session.
    package let allowance: Int

    package init(batch: DeltaBatch, stream: Stream?, check: WriterCheck, writers: WriterBounds, allowance: Int) {
        self.batch = batch
        self.stream = stream
        self.check = check
        self.writers = writers
        self.allowance = allowance
    }

    /// The steps for `batch` of `stream`, received under `terms`, its writers as `check` found them.
    package init(_ batch: DeltaBatch, of stream: Stream?, checked check: WriterCheck, under terms: BatchTerms) {
        self.init(batch: batch, stream: stream, check: check, writers: terms.writers, allowance: terms.allowance)
    }

    /// The steps, in a backend's write transaction: how many fields changed, the version vector
    /// after the batch when there is something to tell (a field changed, or a stream
    /// completed), and how many of its writes were refused for want of a signature.
    package func apply<Write: BatchReceiving>(
        in write: inout Write
    ) throws -> (changed: Int, version: VersionVector?, refusedUnsigned: Int) {
        try check.check(writers, allowance: allowance) { try write.writerCount() }
        if let session = stream?.rejoinedAt { try write.requireNoRejoin(since: session) }
        if let base = batch.base, !base.isEmpty {
            let held = try write.held(of: base.nodes)
            guard batch.isApplicable(to: held) else { throw StoreError.staleDelta(base: base, held: held) }
        }
        _ = try write.retireWriterIfWitnessed(by: check.covers, batch: batch)
        let changed = try write.merge(batch.updates, proofs: batch.proofs)
        try write.record(covers: check.covers, of: stream)
        let told = changed > 0 || stream?.completes == true
        return (changed, told ? try write.versionVector() : nil, write.refusedUnsigned)
    }
}

/// What a backend's write transaction gives the witness rule (``retireWriterIfWitnessed(by:batch:)``):
/// its current writer, and a way to retire it.
package protocol WriterWitnessing {
    /// The writer the replica's local writes go under now.
    mutating func currentWriterID() throws -> NodeID
    /// How far the replica holds `writer`'s writes (its counter in the version vector).
    mutating func heldCounter(of writer: NodeID) throws -> UInt64
    /// Marks the current writer retired: the next local write takes a new one.
    mutating func retireCurrentWriter() throws
}

/// What a backend's write transaction, with its merge, gives ``BatchReceipt``: each a step in
/// that backend's SQL, none a decision.
package protocol BatchReceiving: WriterWitnessing {
    /// How many writers the replica holds (``WriterBounds/total`` bounds it).
    mutating func writerCount() throws -> Int
    /// Throws ``StoreError/rejoinedSince(session:replica:)`` unless the replica last rejoined at
    /// `session`.
    mutating func requireNoRejoin(since session: UInt64) throws
    /// What the replica holds of `nodes`' writes.
    mutating func held(of nodes: [NodeID]) throws -> VersionVector
    /// Merges `updates` through the core, and keeps the signed runs of `proofs` (checked before
    /// the batch came: ``RunCheck``); how many fields changed.
    mutating func merge(_ updates: [FieldUpdate], proofs: [RunProof]) throws -> Int
    /// How many of the merged writes were refused for want of their member's signature.
    var refusedUnsigned: Int { get }
    /// Records what a batch covers: `stream`'s progress, completing it with its last batch, or
    /// without a stream, in the version vector at once.
    mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws
    /// The version vector as the transaction sees it.
    mutating func versionVector() throws -> VersionVector
}

extension WriterWitnessing {
    /// Retires the current writer if `claim` (a peer's vector, or a batch's covers) or the
    /// states of `batch` have seen more of it than the replica holds (``WriterContinuity``):
    /// the replica was rolled back. True if it retired it.
    package mutating func retireWriterIfWitnessed(by claim: VersionVector, batch: DeltaBatch? = nil) throws -> Bool {
        let current = try currentWriterID()
        let claimed = max(claim[current], batch?.highestSeen(of: current) ?? 0)
        guard claimed > 0 else { return false }
        let held = try heldCounter(of: current)
        guard
            WriterContinuity.peerWitnessesRollback(
                writer: current,
                held: VersionVector([current: held]),
                peer: VersionVector([current: claimed])
            )
        else { return false }
        try retireCurrentWriter()
        return true
    }
}

/// A backend's rows in the write transaction of a peer's batch: the merge's rows
/// (``MergeRows``) and the steps of ``BatchReceipt`` beyond the merge, each in that backend's
/// SQL. ``BatchWrite`` puts them together with the merge, once for every backend.
package protocol BatchRows: MergeRows, WriterWitnessing {
    /// How many writers the replica holds (``WriterBounds/total`` bounds it).
    mutating func writerCount() throws -> Int
    /// Throws ``StoreError/rejoinedSince(session:replica:)`` unless the replica last rejoined at
    /// `session`.
    mutating func requireNoRejoin(since session: UInt64) throws
    /// What the replica holds of `nodes`' writes.
    mutating func held(of nodes: [NodeID]) throws -> VersionVector
    /// Records what a batch covers (``BatchReceiving/record(covers:of:)``).
    mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws
    /// The merge changed `changed` fields (more than none): a backend that marks its writer's
    /// progress (the SQLite store's restore check) marks it here.
    mutating func merged(changed: Int) throws
}

/// A peer's batch in a backend's write transaction: its rows and the merge, as
/// ``BatchReceipt/apply(in:)`` takes them.
package struct BatchWrite<Rows: BatchRows>: BatchReceiving {
    package var rows: Rows
    package var merge: BatchMerge<Rows>

    package init(rows: Rows, merge: BatchMerge<Rows>) {
        self.rows = rows
        self.merge = merge
    }

    package var refusedUnsigned: Int { merge.refusedUnsigned }

    package mutating func currentWriterID() throws -> NodeID { try rows.currentWriterID() }

    package mutating func heldCounter(of writer: NodeID) throws -> UInt64 { try rows.heldCounter(of: writer) }

    package mutating func retireCurrentWriter() throws { try rows.retireCurrentWriter() }

    package mutating func writerCount() throws -> Int { try rows.writerCount() }

    package mutating func requireNoRejoin(since session: UInt64) throws { try rows.requireNoRejoin(since: session) }

    package mutating func held(of nodes: [NodeID]) throws -> VersionVector { try rows.held(of: nodes) }

    package mutating func merge(_ updates: [FieldUpdate], proofs: [RunProof]) throws -> Int {
        let changed = try merge.merge(updates, proofs: proofs, in: &rows)
        if changed > 0 { try rows.merged(changed: changed) }
        return changed
    }

    package mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws {
        try rows.record(covers: covers, of: stream)
    }

    package mutating func versionVector() throws -> VersionVector { try rows.versionVector() }
}
