public import LansyncCore

/// What a session starts from (``ReplicaStore/sessionStart(with:)``), read at one moment.
public struct SessionStart: Sendable {
    public var vector: VersionVector
    public var folded: VersionVector
    public var resume: (covers: VersionVector, incarnation: NodeID)?
    public var rejoinedAt: UInt64

    public init(
        vector: VersionVector,
        folded: VersionVector,
        resume: (covers: VersionVector, incarnation: NodeID)?,
        rejoinedAt: UInt64
    ) {
        self.vector = vector
        self.folded = folded
        self.resume = resume
        self.rejoinedAt = rejoinedAt
    }
}
