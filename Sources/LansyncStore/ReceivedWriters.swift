import GRDB
import LansyncCore
public import LansyncReplica

// The SQLite store's side of ``WriterCheck``: its look-ups, in one read before the write lock.
extension WriterCheck {
    /// Past this many writers to look up, the SQLite store reads every writer's id at once instead.
    static let scanAbove = 256

    /// Looks up, in one read, the writers `batch` names that `cache` does not know yet (none, for
    /// a batch of writers this process has seen before).
    init(_ batch: DeltaBatch, cache: NodeRows, read: ((Database) throws -> Void) throws -> Void) throws {
        try self.init(batch, isKnown: cache.isKnown) { unknown in
            var found = Set<NodeID>()
            if unknown.count > Self.scanAbove {
                try read { db in
                    let held = Set(try String.fetchAll(db, sql: "SELECT node_id FROM node"))
                    found = unknown.filter { held.contains($0.text) }
                }
            } else {
                try read { db in
                    let known = try db.cachedStatement(sql: "SELECT 1 FROM node WHERE node_id = ?")
                    for node in unknown where try Bool.fetchOne(known, arguments: [node.text]) != nil {
                        found.insert(node)
                    }
                }
            }
            cache.noteCommitted(found)
            return found
        }
    }

    /// Throws unless merging the batch keeps the replica within `bounds`, given `allowance`
    /// writers still allowed to be new in this session.
    func check(_ bounds: WriterBounds, allowance: Int, db: Database) throws {
        guard !newWriters.isEmpty else { return }
        // Rows are only ever added, so the largest row id counts them without a scan.
        try check(bounds, allowance: allowance) {
            try Int.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM node") ?? 0
        }
    }
}

extension ReplicaStore {
    /// How many writers (rows of table `node`) this replica knows: what ``WriterBounds/total``
    /// bounds.
    public func writerCount() throws(StoreError) -> Int {
        try guarded { try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM node") ?? 0 } }
    }
}
