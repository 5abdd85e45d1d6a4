import Foundation
import GRDB
public import LansyncCore

extension ReplicaStore {
    /// Keeps the revocations not held yet (each already checked against the authority's
    /// signature by the caller); returns the nodes newly revoked. A node revoked twice keeps its
    /// first revocation.
    @discardableResult
    public func addRevocations(_ revocations: [(node: NodeID, record: [UInt8])]) throws(StoreError) -> [NodeID] {
        guard !revocations.isEmpty else { return [] }
        return try guarded {
            try pool.write { db in
                var added: [NodeID] = []
                for (node, record) in revocations {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO revocation(node_id, record) VALUES (?, ?)",
                        arguments: [Data(node.bytes), Data(record)]
                    )
                    if db.changesCount > 0 { added.append(node) }
                }
                return added
            }
        }
    }

    /// Every revocation held, in its binary form, ordered by node.
    public func revocationRecords() throws(StoreError) -> [[UInt8]] {
        try read { db in
            try Data.fetchAll(db, sql: "SELECT record FROM revocation ORDER BY node_id").map { [UInt8]($0) }
        }
    }
}
