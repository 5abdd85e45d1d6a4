import GRDB
public import LansyncCore
public import LansyncReplica

// The member's role (Docs/SECURITY.md, "Roles"): a reader's replica refuses local edits.
extension ReplicaStore {
    public func setReadOnly(_ why: String?, retiring: Set<NodeID>) throws(StoreError) {
        try guarded {
            try database.write { db in
                if let why {
                    try Transaction.setMeta("read_only", why, db: db)
                    return
                }
                let was = try Self.readOnlyReason(db: db)
                try db.execute(sql: "DELETE FROM meta WHERE key = 'read_only'")
                let current = try Transaction.currentWriter(db: db)
                guard was != nil || retiring.contains(current) else { return }
                // A peer's witness of a rollback ("1") stays: it also moves the change feed on.
                let retired = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'writer_retired'")
                if retired != "1" { try Transaction.setMeta("writer_retired", Transaction.retiredForRole, db: db) }
            }
        }
    }

    public func readOnlyReason() throws(StoreError) -> String? {
        try read { db in try Self.readOnlyReason(db: db) }
    }

    static func readOnlyReason(db: Database) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'read_only'"))
    }
}
