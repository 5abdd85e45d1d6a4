public import LansyncCore

/// The stream a peer's batch belongs to: its sender, the incarnation it said hello as, when the
/// replica had last rejoined as the session said hello (nil: not checked), and whether this batch
/// completes it (its `done` came with it).
public struct IncomingStream: Sendable {
    public var sender: NodeID
    public var incarnation: NodeID
    public var rejoinedAt: UInt64?
    public var completes: Bool

    public init(sender: NodeID, incarnation: NodeID, rejoinedAt: UInt64?, completes: Bool) {
        self.sender = sender
        self.incarnation = incarnation
        self.rejoinedAt = rejoinedAt
        self.completes = completes
    }
}

/// What a peer's batch is merged under: the wall clock, the relay's limits (`refuse`), the
/// revocations and roles that refuse writes (`revoked`), and the bounds on the replica's writers,
/// with `allowance` writers still allowed to be new in this session.
public struct BatchTerms: Sendable {
    public var wallMilliseconds: UInt64
    public var refuse: FieldRefusal?
    public var revoked: RevokedWriters
    public var writers: WriterBounds
    public var allowance: Int

    public init(
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters(),
        writers: WriterBounds = .standard,
        allowance: Int? = nil
    ) {
        self.wallMilliseconds = wallMilliseconds
        self.refuse = refuse
        self.revoked = revoked
        self.writers = writers
        self.allowance = allowance ?? writers.perSession
    }
}

/// A store that takes in peers' batches: each merged in one write transaction, its writers checked
/// first, by ``BatchReceipt``'s steps and ``BatchMerge``. The store gives the one entry point;
/// the ways to call it are written once, below.
public protocol BatchIntake {
    /// Merges `batch` (of `stream`, or of none: what it covers joins the version vector at once)
    /// under `terms`, in one transaction; what it did.
    func receive(_ batch: DeltaBatch, stream: IncomingStream?, terms: BatchTerms) throws(StoreError) -> ReceivedBatch
}

extension BatchIntake {
    /// Merges a batch received from a peer outside any stream, and records what it covers, in one
    /// transaction. Applying a batch again changes nothing. Returns how many fields changed.
    ///
    /// With `refuse` (the relay), a field state it refuses is not merged: the replica overrules it
    /// instead, with a write of its own that has seen it and keeps the field's current value (null
    /// if it had none), in the same transaction. So the refusal reaches every node and the batch's
    /// other changes, and the stream, carry on. Writes that `revoked` refuses (a revoked node's,
    /// after its cut) are overruled the same way, keeping the field's value without them; an item
    /// such a write created is deleted.
    ///
    /// A batch that covers more of this replica's own writer than the replica holds retires that
    /// writer (``WriterContinuity``).
    @discardableResult
    public func apply(
        _ batch: DeltaBatch,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters()
    ) throws(StoreError) -> Int {
        try receive(
            batch,
            stream: nil,
            terms: BatchTerms(wallMilliseconds: wallMilliseconds, refuse: refuse, revoked: revoked)
        ).changed
    }

    /// Merges a batch of `sender`'s stream (sent while it wrote as `incarnation`), within
    /// `writers`: the batch's writers are checked first (``WriterCheck``), with `allowance`
    /// writers still allowed to be new in this session. A batch past a bound is refused whole
    /// (``StoreError/tooManyWriters(held:new:limit:)``, ``StoreError/tooManyNewWriters(new:perSession:)``);
    /// covers naming writers this replica cannot verify are left out.
    ///
    /// What the batch covers is recorded as the stream's progress and joins the version vector
    /// only when the stream completes (``ReplicaStorage/completeStream(from:rejoinedAt:)``), so an
    /// interrupted stream never leaves a claim on writes whose newer states were still to come.
    /// `completingStream`: the batch is the last of the stream, completed in the same transaction.
    /// `rejoinedAt`: when the replica last rejoined as the session said hello (a batch of a session
    /// from before a rejoin is refused, ``StoreError/rejoinedSince(session:replica:)``).
    @discardableResult
    public func receive(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters(),
        writers: WriterBounds = .standard,
        allowance: Int? = nil,
        rejoinedAt: UInt64? = nil,
        completingStream: Bool = false
    ) throws(StoreError) -> ReceivedBatch {
        try receive(
            batch,
            stream: IncomingStream(
                sender: sender,
                incarnation: incarnation,
                rejoinedAt: rejoinedAt,
                completes: completingStream
            ),
            terms: BatchTerms(
                wallMilliseconds: wallMilliseconds,
                refuse: refuse,
                revoked: revoked,
                writers: writers,
                allowance: allowance
            )
        )
    }

    /// ``receive(_:from:incarnation:wallMilliseconds:refuse:revoked:writers:allowance:rejoinedAt:completingStream:)``
    /// within the standard bounds; how many fields changed.
    @discardableResult
    public func apply(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters()
    ) throws(StoreError) -> Int {
        try receive(
            batch,
            from: sender,
            incarnation: incarnation,
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked
        ).changed
    }
}
