import LansyncCore
public import LansyncReplica
import PostgresNIO

// Invitations this replica's node issued (``InviteKeeping``: their life is decided once, in
// LansyncReplica); here, their rows in SQL.
extension PostgresReplica: InviteKeeping {
    /// Runs `body` over the invite rows in one transaction when `writing` (a redemption locks the
    /// rows it reads: two relay processes are two writers), else in one snapshot.
    public func withInviteRows<T>(writing: Bool, _ body: (inout any InviteRows) throws -> T) throws(StoreError) -> T {
        func inRows(_ db: BlockingPostgres.Statements) throws -> T {
            var rows: any InviteRows = PostgresInviteRows(db: db)
            return try body(&rows)
        }
        return try guarded { writing ? try database.transaction(inRows) : try database.statements(inRows) }
    }
}

/// Table `invite` in one transaction.
struct PostgresInviteRows: InviteRows {
    let db: BlockingPostgres.Statements

    func forgetInvites(endedBefore time: UInt64) throws {
        try db.run("DELETE FROM invite WHERE expires_at < \(Int64(clamping: time))")
    }

    func insertInvite(_ invite: InviteRecord) throws {
        try db.run(
            """
            INSERT INTO invite (secret, name, created_at, expires_at)
            VALUES (\(ByteBuffer(bytes: invite.secret)), \(invite.name), \(bigint: invite.createdAt), \(bigint: invite.expiresAt))
            """
        )
    }

    func invites(locked: Bool) throws -> [InviteRecord] {
        try db.run(
            """
            SELECT secret, name, created_at, expires_at, used_at, used_by FROM invite
            ORDER BY created_at DESC \(unescaped: locked ? "FOR UPDATE" : "")
            """
        ).map { row in
            let (secret, name, created, expires, usedAt, usedBy) = try row.decode(
                (ByteBuffer, String?, Int64, Int64, Int64?, ByteBuffer?).self
            )
            return InviteRecord(
                secret: Array(secret.readableBytesView),
                name: name,
                createdAt: UInt64(max(0, created)),
                expiresAt: UInt64(max(0, expires)),
                usedAt: usedAt.map { UInt64(max(0, $0)) },
                usedBy: usedBy.map { NodeID(bytes: Array($0.readableBytesView)) }
            )
        }
    }

    func markUsed(secret: [UInt8], by node: NodeID, at time: UInt64) throws {
        try db.run(
            """
            UPDATE invite SET used_at = \(bigint: time), used_by = \(ByteBuffer(bytes: node.bytes))
            WHERE secret = \(ByteBuffer(bytes: secret))
            """
        )
    }
}
