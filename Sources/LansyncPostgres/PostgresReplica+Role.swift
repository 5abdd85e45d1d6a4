public import LansyncCore
public import LansyncReplica
import PostgresNIO

// The member's role (Docs/SECURITY.md, "Roles"), kept in `meta` as the SQLite store keeps it: a
// reader's replica refuses local edits.
extension PostgresReplica {
    public func setReadOnly(_ why: String?, retiring: Set<NodeID>) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                if let why {
                    try Self.setMeta("read_only", why, db)
                    return
                }
                let was = try Self.readOnlyReason(db)
                try db.run("DELETE FROM meta WHERE key = 'read_only'")
                let current = try db.value("SELECT value FROM meta WHERE key = 'writer_id'", as: String.self)
                guard was != nil || retiring.contains(where: { $0.text == current }) else { return }
                // A peer's witness of a rollback ("1") stays: it also moves the change feed on.
                let retired = try db.value("SELECT value FROM meta WHERE key = 'writer_retired'", as: String.self)
                if retired != "1" { try Self.setMeta("writer_retired", Self.retiredForRole, db) }
            }
        }
    }

    public func readOnlyReason() throws(StoreError) -> String? {
        try guarded { try database.statements { db in try Self.readOnlyReason(db) } }
    }

    static func readOnlyReason(_ db: BlockingPostgres.Statements) throws -> String? {
        try db.value("SELECT value FROM meta WHERE key = 'read_only'", as: String.self)
    }

    /// Meta `writer_retired`'s value when the member was a reader and may write again; "1" is
    /// a peer's witness of a rollback.
    static let retiredForRole = "role"
}
