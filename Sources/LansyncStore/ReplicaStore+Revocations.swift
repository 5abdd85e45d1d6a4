import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Refusing a revoked node's writes (``RevokedWriters``): a field that shows one is overruled by
// this replica, with a write of its own that has seen it and keeps the value the field had
// without it, the way the relay overrules a change over its limits. The overrule travels like
// any edit, so the refused write stops showing everywhere it reaches, even on replicas that took
// it in before they held the revocation, and `history` and `status` show it as rejected.

extension ReplicaStore {
    /// ``ReplicaStorage/overruleRevokedWrites(_:wallMilliseconds:)``: the overrules are the
    /// replica's own writes, under its writer, whose marker they move.
    @discardableResult
    public func overruleRevokedWrites(_ revoked: RevokedWriters, wallMilliseconds: UInt64) throws(StoreError) -> Int {
        // Nothing refused, nothing overruled: the merge sees so before it reads a row.
        try guarded {
            try write { tx, me in
                var rows = SQLiteRows(tx: tx, lease: lease, nodeName: me.nodeName, signer: signing.current)
                let (changed, writer) = try BatchMerge.overrule(revoked, at: wallMilliseconds, in: &rows)
                guard let writer else { return .rollback(0) }
                tx = rows.tx
                tx.writerMarker = (writer.id, try tx.countChange())
                try tx.saveClock()
                return .commit(changed)
            }
        }
    }

    /// The writes of revoked nodes this replica refused (overrules it or another member wrote,
    /// for a revocation), newest first.
    public func revokedWriteRejections(limit: Int = StoreDefaults.revokedRejections) throws(StoreError) -> [Rejection] {
        try read { db in
            try Row.fetchAll(db, sql: Rejection.refusedWritesQuery + " LIMIT ?", arguments: [limit]).map {
                Rejection(
                    item: $0[0] as String,
                    field: $0[1] as String,
                    counter: $0[2] as Int64,
                    reason: $0[3] as String
                )
            }
        }
    }
}

extension SQLiteRows: VersionIndexReading {
    func writerRows() throws -> [(row: Int64, id: NodeID)] {
        try Row.fetchAll(tx.db, sql: "SELECT id, node_id FROM node").compactMap { row in
            NodeID(text: row[1]).map { (row[0] as Int64, $0) }
        }
    }

    func indexedVersions(ofWriterRow row: Int64) throws -> [(counter: UInt64, field: Int64)] {
        // A cursor: a writer may have a million live versions, and a row object each would
        // take hundreds of megabytes.
        var versions: [(counter: UInt64, field: Int64)] = []
        let cursor = try Row.fetchCursor(
            tx.db,
            sql: "SELECT counter, field FROM version WHERE node = ?",
            arguments: [row]
        )
        while let version = try cursor.next() {
            versions.append((UInt64(clamping: version[0] as Int64), version[1] as Int64))
        }
        return versions
    }

    func fieldKeys(ofRows rows: Set<Int64>) throws -> [FieldKey] {
        try rows.sorted().compactMap { fieldRow in
            try Row.fetchOne(
                tx.db,
                sql: "SELECT i.item_id, f.name FROM field f JOIN item i ON i.id = f.item WHERE f.id = ?",
                arguments: [fieldRow]
            ).map { FieldKey(item: ItemID(unchecked: $0[0] as String), field: FieldName(unchecked: $0[1] as String)) }
        }
    }
}

extension Transaction {
    /// A field's history, newest first: each write's dot and its JSON (none for `field` nil).
    func history(ofField field: Int64?) throws -> [(dot: Dot, write: String)] {
        guard let field else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT n.node_id, h.counter, h.write FROM history h JOIN node n ON n.id = h.node
                WHERE h.field = ? ORDER BY h.seq DESC
                """,
            arguments: [field]
        ).compactMap { row in
            NodeID(text: row[0]).map { (Dot(node: $0, counter: UInt64(clamping: row[1] as Int64)), row[2] as String) }
        }
    }
}
