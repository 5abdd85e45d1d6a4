public import LansyncCore

/// One invite this machine issued (table `invite`).
public struct InviteRecord: Sendable, Equatable {
    public var secret: [UInt8]
    /// The name the inviter chose for the new machine, if any.
    public var name: String?
    /// Unix milliseconds.
    public var createdAt: UInt64
    public var expiresAt: UInt64
    public var usedAt: UInt64?
    public var usedBy: NodeID?

    public init(
        secret: [UInt8],
        name: String?,
        createdAt: UInt64,
        expiresAt: UInt64,
        usedAt: UInt64? = nil,
        usedBy: NodeID? = nil
    ) {
        self.secret = secret
        self.name = name
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
        self.usedBy = usedBy
    }
}

/// What became of a join request checked against this machine's invites.
public enum InviteRedemption: Sendable, Equatable {
    /// The invite was valid; it is now used by `node`.
    case admitted(InviteRecord)
    /// No invite of this machine's matches the proof.
    case unknown
    /// It matched an invite that was already used, or has expired.
    case used(at: UInt64)
    case expired(at: UInt64)
}

extension InviteRecord {
    /// What redeeming this invite (its secret matched the proof) by `node` at `now` comes to:
    /// refused if it was used or has expired, else admitted and marked used. Every store keeps
    /// this rule; the store makes it one transaction.
    public func redeemed(by node: NodeID, at now: UInt64) -> InviteRedemption {
        if let usedAt { return .used(at: usedAt) }
        if expiresAt <= now { return .expired(at: expiresAt) }
        var used = self
        used.usedAt = now
        used.usedBy = node
        return .admitted(used)
    }
}
