import BenchSQLite
import Foundation

/// Watches a lansync replica file: its version vector, as committed.
final class ReplicaProbe {
    let db: SQLite
    init(_ directory: String) throws { db = try SQLite(directory + "/replica.sqlite") }

    /// node id → counter, for every node with writes.
    func versionVector() throws -> [String: Int64] {
        var vv: [String: Int64] = [:]
        for row in try db.query("SELECT node_id, counter FROM node WHERE counter > 0") {
            vv[row[0]] = Int64(row[1]) ?? 0
        }
        return vv
    }

    /// How far this replica has received `node`'s writes.
    func counter(of node: String) throws -> Int64 {
        Int64(try db.query("SELECT counter FROM node WHERE node_id = ?", [.text(node)]).first?.first ?? "0") ?? 0
    }
}
