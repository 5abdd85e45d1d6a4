import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

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
