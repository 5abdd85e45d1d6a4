public import LansyncCore

/// Bounds on the writers that peers' batches may bring into a replica.
///
/// A member is trusted with data, not with the size of every replica's version vector: a writer
/// id costs a row in table `node`, an entry in every hello and summary this replica sends, and an
/// entry in every peer's vector after that. Without a bound, one session naming a million made-up
/// writers would make the vector too large for the frame every hello must fit in.
public struct WriterBounds: Sendable, Equatable {
    /// The most writers the replica holds: a batch whose states would take it past this is
    /// refused (a permanent error, in `status` on both sides).
    public var total: Int
    /// The most writers new to the replica that one session may bring; a batch past it ends the
    /// session with a temporary error, and the next session carries on from there.
    public var perSession: Int

    public init(total: Int = WriterBounds.standard.total, perSession: Int = WriterBounds.standard.perSession) {
        self.total = total
        self.perSession = perSession
    }

    /// 65,536 writers in all (about 1.3 MB of version vector), 16,384 new ones per session.
    public static let standard = WriterBounds(total: 65_536, perSession: 16_384)
}

/// What merging a peer's batch did, beyond the fields it changed.
public struct ReceivedBatch: Sendable, Equatable {
    /// Field states that changed.
    public var changed = 0
    /// Writers new to this replica that the batch's states named (each now has a `node` row).
    public var newWriters = 0
    /// Entries of the batch's covers that name a writer this replica does not know and no state
    /// of the batch names: not recorded (see ``WriterCheck``).
    public var unverifiedCovers = 0
    /// The replica's version vector as the batch's transaction left it, read in that transaction,
    /// when it changed a field or completed a stream (what the node tells its other sessions);
    /// nil otherwise.
    public var version: VersionVector?
    /// The batch's writes refused for want of their member's signature, where signatures are
    /// required (``SignatureRequirement``): overruled, as a revoked node's are.
    public var refusedUnsigned = 0

    public init(
        changed: Int = 0,
        newWriters: Int = 0,
        unverifiedCovers: Int = 0,
        version: VersionVector? = nil,
        refusedUnsigned: Int = 0
    ) {
        self.changed = changed
        self.newWriters = newWriters
        self.unverifiedCovers = unverifiedCovers
        self.version = version
        self.refusedUnsigned = refusedUnsigned
    }
}
