import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// What a delta is read from: the version vector, the version index, field states by key, and
// the fields whose versions newer writes superseded (DeltaStream drives these).
extension ReplicaStore {
    /// This replica's version vector: how far it has received each node's writes.
    public func versionVector() throws(StoreError) -> VersionVector {
        try guarded { try database.read { db in try Self.versionVector(db: db) } }
    }

    static func versionVector(db: Database) throws -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        try db.cachedStatement(sql: "SELECT node_id, counter FROM node WHERE counter > 0").forEachRow { row in
            if let id = row.nodeID(0) { counters[id] = UInt64(clamping: row.int(1)) }
        }
        return VersionVector(counters)
    }

    /// What a stream starts from, read at once: the change stamp, the version vector, and (if
    /// asked) the nodes of which the replica holds versions beyond it (``unclaimedNodes(db:)``).
    public func streamStart(
        unclaimed: (VersionVector) -> Bool
    ) throws(StoreError) -> (
        stamp: UInt64, versionVector: VersionVector, unclaimed: [NodeID]
    ) {
        try guarded {
            try database.read { db in
                let stamp =
                    UInt64(
                        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'changes'"))
                            ?? "0"
                    ) ?? 0
                let vv = try Self.versionVector(db: db)
                return (stamp, vv, unclaimed(vv) ? try Self.unclaimedNodes(db: db) : [])
            }
        }
    }

    /// The version index rows of one origin node after a counter, for ``DeltaPlanner``.
    public func versionRows(
        node: NodeID,
        after counter: UInt64,
        limit: Int
    ) throws(StoreError) -> [DeltaPlanner.IndexRow] {
        try read { db in try versionRows(db, node: node, after: counter, limit: limit) }
    }

    /// The local row number of a node id in table `node`; nil if this replica never heard of it.
    static func nodeRow(of node: NodeID, db: Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM node WHERE node_id = ?"), arguments: [node.text])
    }

    func versionRows(_ db: Database, node: NodeID, after counter: UInt64, limit: Int) throws -> [DeltaPlanner.IndexRow]
    {
        guard let nodeRow = try Self.nodeRow(of: node, db: db) else { return [] }
        var rows: [DeltaPlanner.IndexRow] = []
        // Stepped in place: planned for every delta of every session (a relay's live deltas).
        try db.cachedStatement(
            sql: """
                SELECT v.counter, i.item_id, f.name FROM version v
                JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                WHERE v.node = ? AND v.counter > ? ORDER BY v.counter LIMIT ?
                """
        ).forEachRow { bind in
            bind.int(1, nodeRow)
            bind.int(2, Int64(clamping: counter))
            bind.int(3, min(limit, Int(Int32.max)))
        } _: { row in
            rows.append(
                (
                    UInt64(clamping: row.int(0)),
                    FieldKey(item: ItemID(unchecked: row.text(1)), field: FieldName(unchecked: row.text(2)))
                )
            )
        }
        return rows
    }

    /// The current states of the given fields (fields that do not exist are skipped).
    public func fieldUpdates(_ keys: [FieldKey]) throws(StoreError) -> [FieldUpdate] {
        let read = try sizedFieldUpdates(keys)
        if let broken = read.broken.first {
            throw .corrupt(path: path, detail: "the state of \(broken.item).\(broken.field) does not decode")
        }
        return read.updates
    }

    /// The same, with their stored size in bytes (states, item ids and names): what a batch of
    /// them weighs, without encoding anything again; and the keys whose state does not decode
    /// (damage: the replica is marked damaged, the caller decides what to send instead).
    func sizedFieldUpdates(
        _ keys: [FieldKey]
    ) throws(StoreError) -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        let read = try read { db in try sizedFieldUpdates(db, keys) }
        noteBroken(read.broken)
        return read
    }

    /// The same, inside a read transaction; the caller reports broken states (``noteBroken(_:)``).
    func sizedFieldUpdates(
        _ db: Database,
        _ keys: [FieldKey]
    ) throws -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        let statement = try db.cachedStatement(
            sql: """
                SELECT f.state FROM field f JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ? AND f.name = ?
                """
        )
        var bytes = 0
        var broken: [FieldKey] = []
        let updates = try keys.compactMap { key -> FieldUpdate? in
            var found: [UInt8]?
            try statement.forEachRow { bind in
                bind.text(1, key.item.rawValue)
                bind.text(2, key.field.rawValue)
            } _: { row in
                found = row.blob(0)
            }
            guard let blob = found else { return nil }
            bytes += blob.count + key.item.rawValue.utf8.count + key.field.rawValue.utf8.count
            guard let state = try? StoredState.decode(blob, db: db, nodes: nodeRows) else {
                broken.append(key)
                return nil
            }
            return FieldUpdate(key: key, state: state)
        }
        return (updates, bytes, broken)
    }

    /// Marks the replica damaged when a field state did not decode.
    public func noteBroken(_ broken: [FieldKey]) {
        if let first = broken.first { markDamaged("the state of \(first.item).\(first.field) does not decode") }
    }

    /// Fields whose versions the version index lost to newer writes after `cursor` (a change
    /// stamp and a field row, in that order), up to `limit`, and where the next look starts.
    func superseded(
        _ db: Database,
        after cursor: SupersededCursor,
        limit: Int
    ) throws -> (keys: [FieldKey], next: SupersededCursor, complete: Bool) {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT f.superseded_at, f.id, i.item_id, f.name FROM field f JOIN item i ON i.id = f.item
                    WHERE f.superseded_at > 0 AND (f.superseded_at, f.id) > (?, ?)
                    ORDER BY f.superseded_at, f.id LIMIT ?
                    """
            ),
            arguments: [Int64(clamping: cursor.stamp), cursor.field, limit]
        )
        var next = cursor
        let keys = try rows.map { row -> FieldKey in
            next = SupersededCursor(
                stamp: UInt64((try row.decode(atIndex: 0) as Int64)),
                field: try row.decode(atIndex: 1)
            )
            return FieldKey(
                item: ItemID(unchecked: (try row.decode(atIndex: 2))),
                field: FieldName(unchecked: (try row.decode(atIndex: 3)))
            )
        }
        return (keys, next, rows.count < limit)
    }

    /// Origin nodes of which this replica holds versions beyond its own version vector (states
    /// of streams not yet complete): a delta sends them too, unclaimed. One index seek per node.
    static func unclaimedNodes(db: Database) throws -> [NodeID] {
        try String.fetchAll(
            db,
            sql: """
                SELECT n.node_id FROM node n WHERE EXISTS (SELECT 1 FROM version v WHERE v.node = n.id AND v.counter > n.counter)
                """
        ).compactMap(NodeID.init(text:))
    }
}
