public import LansyncCore

/// A store's invite rows, in one of its write transactions: each a statement in the store's SQL.
/// What an invite's life is (kept, forgotten a day past its end, redeemed once) is decided once,
/// in ``InviteKeeping``.
public protocol InviteRows {
    /// Forgets the invites that ended before `time` (milliseconds since 1970).
    mutating func forgetInvites(endedBefore time: UInt64) throws
    /// Keeps a new invite.
    mutating func insertInvite(_ invite: InviteRecord) throws
    /// Every invite kept, newest first; `locked`: none can be redeemed by another transaction
    /// until this one ends (two machines racing with one code cannot both get in).
    mutating func invites(locked: Bool) throws -> [InviteRecord]
    /// Marks the invite of `secret` used by `node` at `time`.
    mutating func markUsed(secret: [UInt8], by node: NodeID, at time: UInt64) throws
}

/// A store that keeps the invitations its node issued (``ReplicaStorage``'s invites), over the
/// rows it gives in one transaction (``InviteRows``).
public protocol InviteKeeping {
    /// Runs `body` over the store's invite rows in one transaction (a write transaction when
    /// `writing`), mapping its errors to ``StoreError``.
    func withInviteRows<T>(writing: Bool, _ body: (inout any InviteRows) throws -> T) throws(StoreError) -> T
}

extension InviteKeeping {
    /// Keeps an invitation an admitting machine issued: its secret, the name it admits, and when
    /// it expires. Invites a day past their end are forgotten: of no further use, not even to
    /// explain a refusal.
    public func addInvite(secret: [UInt8], name: String?, now: UInt64, expiresAt: UInt64) throws(StoreError) {
        try withInviteRows(writing: true) { rows in
            try rows.forgetInvites(endedBefore: now > Self.dayMilliseconds ? now - Self.dayMilliseconds : 0)
            try rows.insertInvite(
                InviteRecord(secret: secret, name: name, createdAt: now, expiresAt: expiresAt, usedAt: nil, usedBy: nil)
            )
        }
    }

    /// Finds the invite whose secret `matches` (the caller checks a proof with it) and, if it is
    /// unused and unexpired, marks it used by `node`, in one transaction that locks the invites it
    /// reads: two machines racing with one code, through one process or two, cannot both get in.
    public func redeemInvite(
        now: UInt64,
        by node: NodeID,
        matches: ([UInt8]) -> Bool
    ) throws(StoreError) -> InviteRedemption {
        try withInviteRows(writing: true) { rows in
            for record in try rows.invites(locked: true) where matches(record.secret) {
                let outcome = record.redeemed(by: node, at: now)
                if case .admitted = outcome { try rows.markUsed(secret: record.secret, by: node, at: now) }
                return outcome
            }
            return .unknown
        }
    }

    /// Every invite this machine issued and still remembers, newest first.
    public func invites() throws(StoreError) -> [InviteRecord] {
        try withInviteRows(writing: false) { rows in try rows.invites(locked: false) }
    }

    private static var dayMilliseconds: UInt64 { 86_400_000 }
}
