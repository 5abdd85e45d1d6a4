public import LansyncCore

/// What a replica knows of one member's progress (table `member`): its version vector as of
/// its last session anywhere in the cluster, and when that was.
public struct MemberReport: Sendable, Equatable {
    public var nodeID: NodeID
    public var seen: VersionVector
    /// Unix milliseconds of the session the report comes from.
    public var at: UInt64
    /// When `lansync members forget` said the member is gone for good; nil if it is not.
    public var forgottenAt: UInt64?

    /// The writers the report was told without (its teller's folds, for a report a 1.8 hello
    /// marks folded; Docs/MERGE.md, "Retired writers fold"): joined back as it is recorded, for
    /// the writers this replica knows.
    public var folds = VersionVector()

    /// The latest report the member signed of its own progress (the wire form of a 1.13 signed
    /// report; nil if none is held) and the member's time in it: kept only to be passed on, and
    /// replaced only by a later one (``signedAt``). The node checks the signature before it
    /// records one; storage keeps the bytes as they are.
    public var signed: [UInt8]?
    public var signedAt: UInt64 = 0

    public init(
        nodeID: NodeID,
        seen: VersionVector,
        at: UInt64,
        forgottenAt: UInt64? = nil,
        folds: VersionVector = VersionVector(),
        signed: [UInt8]? = nil,
        signedAt: UInt64 = 0
    ) {
        self.nodeID = nodeID
        self.seen = seen
        self.at = at
        self.forgottenAt = forgottenAt
        self.folds = folds
        self.signed = signed
        self.signedAt = signedAt
    }
}
