import Foundation
import GRDB
public import LansyncReplica

extension ReplicaStore {
    /// Keeps the cluster statements whose keys are not held yet (each already checked against the
    /// authority's signature by the caller); returns how many were new.
    @discardableResult
    public func addStatements(_ statements: [(key: [UInt8], record: [UInt8])]) throws(StoreError) -> Int {
        guard !statements.isEmpty else { return 0 }
        return try guarded {
            try database.write { db in
                var added = 0
                for (key, record) in statements {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO statement(key, record) VALUES (?, ?)",
                        arguments: [Data(key), Data(record)]
                    )
                    added += db.changesCount
                }
                return added
            }
        }
    }

    /// Every cluster statement held, in its binary form.
    public func statementRecords() throws(StoreError) -> [[UInt8]] {
        try read { db in
            try Data.fetchAll(db, sql: "SELECT record FROM statement ORDER BY key").map { [UInt8]($0) }
        }
    }
}
