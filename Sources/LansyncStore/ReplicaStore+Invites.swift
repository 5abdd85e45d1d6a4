import Foundation
import GRDB
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

extension ReplicaStore {
    /// Records a new invite.
    public func addInvite(secret: [UInt8], name: String?, now: UInt64, expiresAt: UInt64) throws(StoreError) {
        try guarded {
            try database.write { db in
                // Invites a day past their end are of no further use, not even to explain a refusal.
                try db.execute(sql: "DELETE FROM invite WHERE expires_at < ?", arguments: [Int64(now) - 86_400_000])
                try db.execute(
                    sql: "INSERT INTO invite(secret, name, created_at, expires_at) VALUES (?, ?, ?, ?)",
                    arguments: [Data(secret), name, Int64(now), Int64(expiresAt)]
                )
            }
        }
    }

    /// Finds the invite whose secret `matches` (the caller checks a proof with it) and, if it is
    /// unused and unexpired, marks it used by `node`, all in one transaction: two machines racing
    /// with one code cannot both get in.
    public func redeemInvite(
        now: UInt64,
        by node: NodeID,
        matches: ([UInt8]) -> Bool
    ) throws(StoreError) -> InviteRedemption {
        try guarded {
            try database.write { db in
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT secret, name, created_at, expires_at, used_at, used_by FROM invite"
                )
                for row in rows {
                    let record = InviteRecord(row: row)
                    guard matches(record.secret) else { continue }
                    let outcome = record.redeemed(by: node, at: now)
                    if case .admitted = outcome {
                        try db.execute(
                            sql: "UPDATE invite SET used_at = ?, used_by = ? WHERE secret = ?",
                            arguments: [Int64(now), Data(node.bytes), Data(record.secret)]
                        )
                    }
                    return outcome
                }
                return .unknown
            }
        }
    }

    /// Every invite this machine issued and still remembers, newest first.
    public func invites() throws(StoreError) -> [InviteRecord] {
        try read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT secret, name, created_at, expires_at, used_at, used_by FROM invite ORDER BY created_at DESC"
            ).map(InviteRecord.init(row:))
        }
    }
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

    init(row: Row) {
        self.init(
            secret: [UInt8](row["secret"] as Data),
            name: row["name"],
            createdAt: UInt64(row["created_at"] as Int64),
            expiresAt: UInt64(row["expires_at"] as Int64),
            usedAt: (row["used_at"] as Int64?).map(UInt64.init),
            usedBy: (row["used_by"] as Data?).map { NodeID(bytes: [UInt8]($0)) }
        )
    }
}
