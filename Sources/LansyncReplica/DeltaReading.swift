public import LansyncCore

/// What a ``DeltaStream`` reads of a store: the one place its subtle parts (what a batch may
/// claim, the fields replaced while it goes on, the byte budget) are written, whichever store
/// holds the replica.
///
/// A store gives the stream a snapshot at a time (``readDelta(_:)``): every read of one batch
/// sees the same committed state.
public protocol DeltaReading: Sendable {
    /// Runs `body` with the reads of one batch, in one read transaction.
    func readDelta<T>(_ body: (any DeltaReads) throws -> T) throws(StoreError) -> T
    /// What a stream starts from, read at once: the change stamp, the version vector, and (when
    /// `unclaimed` says so of the vector) the nodes of which the replica holds versions beyond it
    /// (states of streams it has not finished receiving).
    func streamStart(
        unclaimed: (VersionVector) -> Bool
    ) throws(StoreError) -> (stamp: UInt64, versionVector: VersionVector, unclaimed: [NodeID])
    /// The nodes whose versions of `key` the version index holds.
    func indexedNodes(of key: FieldKey) throws(StoreError) -> Set<NodeID>
    /// A state that did not decode was met: the replica is damaged.
    func noteBroken(_ broken: [FieldKey])
}

/// The reads of one batch of a delta, inside one read transaction (``DeltaReading/readDelta(_:)``).
public protocol DeltaReads {
    /// The version index rows of `node`'s writes after `counter`, by counter, at most `limit`.
    func versionRows(node: NodeID, after counter: UInt64, limit: Int) throws -> [DeltaPlanner.IndexRow]
    /// Fields whose versions left the index after `cursor` (a change stamp, then a field row),
    /// at most `limit`; where the next look starts, and whether this one reached the end.
    func superseded(
        after cursor: SupersededCursor,
        limit: Int
    ) throws -> (keys: [FieldKey], next: SupersededCursor, complete: Bool)
    /// The current states of `keys` (absent fields skipped), their stored size in bytes (states,
    /// ids and names), and the keys whose state does not decode.
    func sizedFieldUpdates(_ keys: [FieldKey]) throws -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey])
    /// How many field states a replica holding `remote` lacks of `local`, counted up to `cap`
    /// in the version index.
    func lacking(local: VersionVector, remote: VersionVector, cap: Int) throws -> Int
    /// The walk's next questions to ``versionRows(node:after:limit:)``, told before they are
    /// asked (``LansyncCore/DeltaPlanner/upcoming(_:)``): a store may read them ahead in one
    /// round trip. The answers must be the same either way; a failure fails the read (in
    /// PostgreSQL the transaction is then aborted).
    func prefetchVersionRows(_ upcoming: [(node: NodeID, after: UInt64)]) throws
    /// The signed runs of `node` held that hold any counter of `counters`, by first counter, each
    /// with how many leaves it has.
    func signedRuns(
        of node: NodeID,
        overlapping counters: ClosedRange<UInt64>
    ) throws -> [(run: SignedRun, leaves: Int)]
    /// The version index rows of `node`'s writes in `counters`: each live version's counter and field.
    func indexedVersions(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [DeltaPlanner.IndexRow]
    /// The leaves kept of `node`'s versions in `counters` that the replica does not hold live
    /// (``FieldRows/keepGone(_:of:)``).
    func goneLeaves(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [RunLeaf]
    /// The certificate (DER) kept for a member's key (``MergeRows/keepCertificate(_:of:)``), if any.
    func memberCertificate(of key: [UInt8]) throws -> [UInt8]?
}

extension DeltaReads {
    /// The counters of the signed run of `node` that holds `counter`, if one is held.
    func signedRunRange(of node: NodeID, containing counter: UInt64) throws -> ClosedRange<UInt64>? {
        try signedRuns(of: node, overlapping: counter...counter).first.map { $0.run.first...$0.run.last }
    }
}

extension DeltaReads {
    /// Nothing read ahead: SQLite's reads are calls in the process.
    public func prefetchVersionRows(_ upcoming: [(node: NodeID, after: UInt64)]) {}
}

extension DeltaReading {
    /// The delta for a peer that announced `remote`, a batch at a time
    /// (``DeltaStream/start(from:for:maxUpdates:budgetBytes:unclaimed:deltaBase:)``), whichever
    /// store reads it.
    public func deltaStream(
        for remote: VersionVector,
        maxUpdates: Int = 512,
        budgetBytes: Int = 2 << 20,
        unclaimed: Bool = true,
        deltaBase: VersionVector? = nil,
        signer: (any WriteSigner)? = nil
    ) throws(StoreError) -> DeltaStream {
        try DeltaStream.start(
            from: self,
            for: remote,
            maxUpdates: maxUpdates,
            budgetBytes: budgetBytes,
            unclaimed: unclaimed,
            deltaBase: deltaBase,
            signer: signer
        )
    }
}

extension ReplicaStorage where Self: DeltaReading {
    /// The delta as the node reads it (``ReplicaStorage``): a ``DeltaStream`` over the store.
    public func deltaStream(
        for remote: VersionVector,
        maxUpdates: Int,
        budgetBytes: Int,
        unclaimed: Bool,
        deltaBase: VersionVector?
    ) throws(StoreError) -> any DeltaSource {
        // Proofs pieced together are checked against their runs for the cluster this replica
        // signs for (its signer's, held in memory: a read of the replica's identity at every
        // anti-entropy round cost an idle node more than anything else here), and its own runs
        // go with its certificate.
        try deltaStream(
            for: remote,
            maxUpdates: maxUpdates,
            budgetBytes: budgetBytes,
            unclaimed: unclaimed,
            deltaBase: deltaBase,
            signer: signing.current
        ) as DeltaStream
    }
}
