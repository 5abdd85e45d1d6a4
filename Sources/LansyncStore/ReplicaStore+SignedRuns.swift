import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// The signed runs of writes the replica holds (Docs/SECURITY.md, "Signed writes").
extension ReplicaStore {
    /// The signed runs held, of `writer` only if given, by writer and first dot.
    public func signedRuns(of writer: NodeID? = nil) throws(StoreError) -> [SignedRun] {
        try read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT n.node_id, r.first, r.last, r.key, r.signature FROM signed_run r JOIN node n ON n.id = r.node
                    WHERE ?1 IS NULL OR n.node_id = ?1 ORDER BY n.node_id, r.first
                    """,
                arguments: [writer?.text]
            )
            return rows.compactMap { row -> SignedRun? in
                guard let writer = NodeID(text: row[0]) else { return nil }
                return SignedRun(
                    writer: writer,
                    first: UInt64(clamping: row[1] as Int64),
                    last: UInt64(clamping: row[2] as Int64),
                    key: Array(row[3] as Data),
                    signature: Array(row[4] as Data)
                )
            }
        }
    }
}

extension ReplicaStore {
    /// Signs the replica's own writes it holds unsigned, once (``HeldWriteSigning``), in one
    /// transaction; how many versions it signed.
    @discardableResult
    public func signHeldOwnWrites() throws(StoreError) -> Int {
        try guarded {
            try write { tx, me in
                var rows = SQLiteRows(tx: tx, lease: lease, nodeName: me.nodeName, signer: signing.current)
                let signed = try HeldWriteSigning.signHeldOwnWrites(in: &rows)
                tx = rows.tx
                return .commit(signed)
            }
        }
    }
}

extension SQLiteRows: HeldWriteRows {
    func ownNode() throws -> NodeID { try Transaction.nodeID(db: tx.db) }

    func signedRanges(ofWriterRow row: Int64) throws -> [ClosedRange<UInt64>] {
        try Row.fetchAll(tx.db, sql: "SELECT first, last FROM signed_run WHERE node = ?", arguments: [row]).compactMap {
            let (first, last) = (UInt64(clamping: $0[0] as Int64), UInt64(clamping: $0[1] as Int64))
            return first <= last ? first...last : nil
        }
    }

    func ownWritesSigned() throws -> Bool {
        try String.fetchOne(tx.db, sql: "SELECT value FROM meta WHERE key = 'own_writes_signed'") != nil
    }

    func markOwnWritesSigned() throws { try tx.setMeta("own_writes_signed", "1") }
}

extension Transaction {
    /// Keeps the leaves of versions the replica drops (superseded, or collected) where a held run
    /// of `writer` covers them: the run's other versions stay provable (``RunProofs``).
    func keepGone(_ leaves: [RunLeaf], of writer: NodeID) throws {
        guard !leaves.isEmpty, let node = try ReplicaStore.nodeRow(of: writer, db: db) else { return }
        let statement = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO run_leaf (node, counter, field, digest) SELECT ?1, ?2, ?3, ?4
                WHERE (SELECT last FROM signed_run WHERE node = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1) >= ?2
                """
        )
        for leaf in leaves {
            try statement.execute(arguments: [
                node, Int64(clamping: leaf.counter), leaf.field.rawValue, Data(leaf.digest.bytes),
            ])
        }
    }

    /// For the versions of field `name` of `item` that collection or purge just dropped (their
    /// version rows gone): a run that still has a live version keeps their digests
    /// (``keepGone(_:of:)``), so it can still prove the rest; one left with none lets all of
    /// its digests go, which no proof needs any more (the run itself stays, for `history`).
    func keepCollected(_ state: FieldState?, item: ItemID, field name: FieldName) throws {
        for version in state?.versions ?? [] {
            guard let node = try ReplicaStore.nodeRow(of: version.dot.node, db: db),
                let run = try Row.fetchOne(
                    db.cachedStatement(
                        sql:
                            "SELECT first, last FROM signed_run WHERE node = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1"
                    ),
                    arguments: [node, Int64(clamping: version.dot.counter)]
                ),
                (run[1] as Int64) >= Int64(clamping: version.dot.counter)
            else { continue }
            let range: [any DatabaseValueConvertible] = [node, run[0] as Int64, run[1] as Int64]
            let live = try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT EXISTS (SELECT 1 FROM version WHERE node = ? AND counter BETWEEN ? AND ?)"
                ),
                arguments: StatementArguments(range)
            )
            if live == true {
                try keepGone([RunLeaf(item: item, field: name, version: version)], of: version.dot.node)
            } else {
                try db.cachedStatement(sql: "DELETE FROM run_leaf WHERE node = ? AND counter BETWEEN ? AND ?")
                    .execute(arguments: StatementArguments(range))
            }
        }
    }
}
