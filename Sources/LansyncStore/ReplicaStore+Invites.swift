import Foundation
import GRDB
import LansyncCore
public import LansyncReplica

// Invitations this replica's node issued (``InviteKeeping``: their life is decided once, in
// LansyncReplica); here, their rows in SQL.
extension ReplicaStore: InviteKeeping {
    /// Runs `body` over the invite rows in one transaction (a write transaction, which SQLite
    /// holds alone, when `writing`).
    public func withInviteRows<T>(writing: Bool, _ body: (inout any InviteRows) throws -> T) throws(StoreError) -> T {
        func inRows(_ db: Database) throws -> T {
            var rows: any InviteRows = SQLiteInviteRows(db: db)
            return try body(&rows)
        }
        return try guarded { writing ? try database.write(inRows) : try database.read(inRows) }
    }
}

/// Table `invite` in one transaction.
struct SQLiteInviteRows: InviteRows {
    let db: Database

    func forgetInvites(endedBefore time: UInt64) throws {
        try db.execute(sql: "DELETE FROM invite WHERE expires_at < ?", arguments: [Int64(clamping: time)])
    }

    func insertInvite(_ invite: InviteRecord) throws {
        try db.execute(
            sql: "INSERT INTO invite(secret, name, created_at, expires_at) VALUES (?, ?, ?, ?)",
            arguments: [
                Data(invite.secret), invite.name, Int64(clamping: invite.createdAt), Int64(clamping: invite.expiresAt),
            ]
        )
    }

    /// (A write transaction in SQLite is the only writer: `locked` asks nothing more.)
    func invites(locked: Bool) throws -> [InviteRecord] {
        try Row.fetchAll(
            db,
            sql: "SELECT secret, name, created_at, expires_at, used_at, used_by FROM invite ORDER BY created_at DESC"
        ).map(InviteRecord.init(row:))
    }

    func markUsed(secret: [UInt8], by node: NodeID, at time: UInt64) throws {
        try db.execute(
            sql: "UPDATE invite SET used_at = ?, used_by = ? WHERE secret = ?",
            arguments: [Int64(clamping: time), Data(node.bytes), Data(secret)]
        )
    }
}

extension InviteRecord {
    /// A row of table `invite` (a negative time, which no lansync writes, reads as 0).
    init(row: Row) {
        self.init(
            secret: [UInt8](row["secret"] as Data),
            name: row["name"],
            createdAt: UInt64(max(0, row["created_at"] as Int64)),
            expiresAt: UInt64(max(0, row["expires_at"] as Int64)),
            usedAt: (row["used_at"] as Int64?).map { UInt64(max(0, $0)) },
            usedBy: (row["used_by"] as Data?).map { NodeID(bytes: [UInt8]($0)) }
        )
    }
}
