public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Refused writes (``ReplicaStorage/overruleRevokedWrites(_:wallMilliseconds:)``) in PostgreSQL.
extension PostgresReplica {
    @discardableResult
    public func overruleRevokedWrites(_ revoked: RevokedWriters, wallMilliseconds: UInt64) throws(StoreError) -> Int {
        try guarded {
            try database.transaction(write: true) { db in
                var rows = PostgresRows(tx: try PostgresWrite(db, origin: .local), signer: signing.current)
                let (changed, _) = try BatchMerge.overrule(revoked, at: wallMilliseconds, in: &rows)
                try rows.tx.finish()
                return changed
            }
        }
    }

    public func revokedWriteRejections(limit: Int) throws(StoreError) -> [Rejection] {
        try guarded {
            try database.statements { db in
                try db.run("\(unescaped: Rejection.refusedWritesQuery) LIMIT \(limit)").map { row in
                    let (item, field, counter, reason) = try row.decode((String, String, Int64, String).self)
                    return Rejection(item: item, field: field, counter: counter, reason: reason)
                }
            }
        }
    }
}

extension PostgresRows: VersionIndexReading {
    func writerRows() throws -> [(row: Int64, id: NodeID)] {
        try tx.db.run("SELECT id, node_id FROM node").compactMap { row in
            let (id, text) = try row.decode((Int64, String).self)
            return NodeID(text: text).map { (id, $0) }
        }
    }

    func indexedVersions(ofWriterRow row: Int64) throws -> [(counter: UInt64, field: Int64)] {
        try tx.db.run("SELECT counter, field FROM version WHERE node = \(row)").map { version in
            let (counter, field) = try version.decode((Int64, Int64).self)
            return (UInt64(clamping: counter), field)
        }
    }

    func fieldKeys(ofRows rows: Set<Int64>) throws -> [FieldKey] {
        try tx.db.run(
            """
            SELECT i.item_id, f.name FROM field f JOIN item i ON i.id = f.item
            WHERE f.id = ANY(\(Array(rows))) ORDER BY f.id
            """
        ).map { row in
            let (item, name) = try row.decode((String, String).self)
            return FieldKey(item: ItemID(unchecked: item), field: FieldName(unchecked: name))
        }
    }
}

extension PostgresWrite {
    /// A field's history, newest first: each write's dot and its JSON (none for a new field).
    func history(ofField field: Int64?) throws -> [(dot: Dot, write: String)] {
        guard let field else { return [] }
        return try db.run(
            """
            SELECT n.node_id, h.counter, h.write FROM history h JOIN node n ON n.id = h.node
            WHERE h.field = \(field) ORDER BY h.seq DESC
            """
        ).compactMap { row in
            let (node, counter, write) = try row.decode((String, Int64, String).self)
            return NodeID(text: node).map { (Dot(node: $0, counter: UInt64(clamping: counter)), write) }
        }
    }
}
