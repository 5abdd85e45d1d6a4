public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Invitations this replica's node issued, redeemed once each, as the SQLite store keeps them.
extension PostgresReplica {
    /// Records a new invite (and forgets those a day past their end).
    public func addInvite(secret: [UInt8], name: String?, now: UInt64, expiresAt: UInt64) throws(StoreError) {
        try guarded {
            try database.transaction { db in
                try db.run("DELETE FROM invite WHERE expires_at < \(Int64(clamping: now) - 86_400_000)")
                try db.run(
                    """
                    INSERT INTO invite (secret, name, created_at, expires_at)
                    VALUES (\(ByteBuffer(bytes: secret)), \(name), \(bigint: now), \(bigint: expiresAt))
                    """
                )
            }
        }
    }

    /// Finds the invite whose secret `matches` and, if it is unused and unexpired, marks it used
    /// by `node`, in one transaction that locks the invites it reads: two machines racing with
    /// one code, through one relay process or two, cannot both get in.
    public func redeemInvite(
        now: UInt64,
        by node: NodeID,
        matches: ([UInt8]) -> Bool
    ) throws(StoreError) -> InviteRedemption {
        try guarded {
            try database.transaction { db in
                for record in try Self.invites(db, lock: true) where matches(record.secret) {
                    let outcome = record.redeemed(by: node, at: now)
                    if case .admitted = outcome {
                        try db.run(
                            """
                            UPDATE invite SET used_at = \(bigint: now), used_by = \(ByteBuffer(bytes: node.bytes))
                            WHERE secret = \(ByteBuffer(bytes: record.secret))
                            """
                        )
                    }
                    return outcome
                }
                return .unknown
            }
        }
    }

    /// Every invite still remembered, newest first.
    public func invites() throws(StoreError) -> [InviteRecord] {
        try guarded { try database.statements { db in try Self.invites(db, lock: false) } }
    }

    private static func invites(_ db: BlockingPostgres.Statements, lock: Bool) throws -> [InviteRecord] {
        try db.run(
            """
            SELECT secret, name, created_at, expires_at, used_at, used_by FROM invite
            ORDER BY created_at DESC \(unescaped: lock ? "FOR UPDATE" : "")
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
}
