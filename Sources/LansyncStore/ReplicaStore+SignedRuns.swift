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
