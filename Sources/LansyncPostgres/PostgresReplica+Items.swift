public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Reads: the replica's identity, its version vector and its items, as ReplicaStorage asks.
extension PostgresReplica {
    /// The replica's node, cluster, writer and names.
    public func info() throws(StoreError) -> ReplicaInfo {
        try guarded { try database.statements { db in try Self.info(db) } }
    }

    static func info(_ db: BlockingPostgres.Statements) throws -> ReplicaInfo {
        var meta: [String: String] = [:]
        for row in try db.run("SELECT key, value FROM meta") {
            let (key, value) = try row.decode((String, String).self)
            meta[key] = value
        }
        guard let node = meta["node_id"].flatMap(NodeID.init(text:)),
            let cluster = meta["cluster_id"].flatMap(NodeID.init(text:)),
            let writer = meta["writer_id"].flatMap(NodeID.init(text:))
        else {
            throw StoreError.corrupt(path: "PostgreSQL", detail: "the replica's identity in table meta is incomplete")
        }
        return ReplicaInfo(
            nodeID: node,
            clusterID: cluster,
            nodeName: meta["node_name"] ?? "",
            fingerprint: meta["fingerprint"] ?? "",
            historyLimit: meta["history_limit"].flatMap(Int.init) ?? ReplicaConstants.defaultHistoryLimit,
            writerID: writer
        )
    }

    /// What the replica holds.
    public func versionVector() throws(StoreError) -> VersionVector {
        try guarded { try database.statements { db in try Self.versionVector(db) } }
    }

    static func versionVector(_ db: BlockingPostgres.Statements) throws -> VersionVector {
        var vector = VersionVector()
        for row in try db.run("SELECT node_id, counter FROM node WHERE counter > 0") {
            let (text, counter) = try row.decode((String, Int64).self)
            guard let node = NodeID(text: text) else { throw Self.damaged("a node id in table node: \(text)") }
            vector.raise(node, to: UInt64(counter))
        }
        return vector
    }

    /// How many writers (rows of table `node`) this replica knows: what ``WriterBounds/total``
    /// bounds.
    public func writerCount() throws(StoreError) -> Int {
        try guarded { try database.statements { db in try db.value("SELECT count(*) FROM node", as: Int.self) ?? 0 } }
    }

    /// The writers this replica has written as, oldest first.
    public func writers() throws(StoreError) -> [WriterRecord] {
        try guarded {
            try database.statements { db in
                try db.run("SELECT writer_id, started, reason FROM writer ORDER BY seq").compactMap { row in
                    let (text, started, reason) = try row.decode((String, Int64, String).self)
                    guard let id = NodeID(text: text) else { return nil }
                    return WriterRecord(
                        id: id,
                        started: UInt64(started),
                        reason: WriterRecord.Reason(rawValue: reason) ?? .`init`
                    )
                }
            }
        }
    }

    /// An item's merge state, nil if the replica never held it.
    public func itemState(_ id: ItemID) throws(StoreError) -> ItemState? {
        try guarded {
            try database.statements { db in
                guard let row = try db.value("SELECT id FROM item WHERE item_id = \(id.rawValue)", as: Int64.self)
                else { return nil }
                return try Self.loadItem(db, id, row: row).state
            }
        }
    }

    /// Every item (of `type`; deleted ones too with `includeDeleted`), in byte order of ids, read
    /// in one snapshot; with `withLocalEdits`, each carries ``LansyncStore/StoredItem/localEdit``.
    /// (It reads the whole answer at once, where the SQLite store steps through it: to be paged
    /// within the snapshot before a relay runs on it.)
    public func forEachItem(
        type: String?,
        includeDeleted: Bool,
        withLocalEdits: Bool,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        let (writers, rows) = try guarded {
            try database.transaction(snapshot: true) { db in
                let writers = withLocalEdits ? Set(try Self.writerIDs(db)) : nil
                let rows = try db.run(
                    """
                    SELECT i.item_id, f.name, f.state FROM item i LEFT JOIN field f ON f.item = i.id
                    WHERE (\(type)::text IS NULL OR i.type = \(type)) AND (\(includeDeleted) OR NOT i.deleted)
                    ORDER BY i.item_id, f.name
                    """
                )
                return (writers, rows)
            }
        }
        try Self.readItems(rows, localWriters: writers, body)
    }

    /// Every item with a field the feed numbered after `seq` (every item with nil), deleted ones
    /// included, in one snapshot; the marks to go on from (``LansyncStore/ReplicaMarks``).
    public func forEachItem(
        changedAfter seq: Int64?,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) -> ReplicaMarks {
        let (marks, rows) = try guarded {
            try database.transaction(snapshot: true) { db in
                let row = try db.run(
                    """
                    SELECT (SELECT value FROM meta WHERE key = 'changes'), (SELECT coalesce(max(seq), 0) FROM field),
                        (SELECT coalesce(max(value::bigint), 0) FROM meta WHERE key IN ('change_floor', 'feed_floor')),
                        (SELECT count(*) FROM item)
                    """
                )
                let (stamp, latest, floor, items) = try row[0].decode((String?, Int64, Int64, Int).self)
                let marks = ReplicaMarks(
                    stamp: stamp.flatMap(UInt64.init) ?? 0,
                    latestSeq: max(latest, floor),
                    floor: floor,
                    items: items
                )
                let rows = try db.run(
                    """
                    SELECT i.item_id, f.name, f.state FROM item i LEFT JOIN field f ON f.item = i.id
                    WHERE \(seq)::bigint IS NULL OR i.id IN (SELECT c.item FROM field c WHERE c.seq > \(seq))
                    ORDER BY i.item_id, f.name
                    """
                )
                return (marks, rows)
            }
        }
        try Self.readItems(rows, localWriters: nil, body)
        return marks
    }

    /// Items from rows of (item id, field name, state) in item order: each item handed to `body`
    /// once its rows end; with `localWriters`, with its latest live local edits.
    private static func readItems(
        _ rows: [PostgresRow],
        localWriters: Set<NodeID>?,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        var current: (id: ItemID, fields: [FieldName: FieldState])?
        func finish() throws {
            guard let done = current else { return }
            var item = StoredItem(ItemState(id: done.id, fields: done.fields))
            if let localWriters {
                var latest = VersionVector()
                for field in done.fields.values {
                    for version in field.versions where localWriters.contains(version.dot.node) {
                        latest.raise(version.dot.node, to: version.dot.counter)
                    }
                }
                item.localEdit = latest.counters.isEmpty ? nil : latest
            }
            try body(item)
        }
        do {
            for row in rows {
                let (text, name, state) = try row.decode((String, String?, ByteBuffer?).self)
                let id = ItemID(unchecked: text)
                if current?.id != id {
                    try finish()
                    current = (id, [:])
                }
                if let name, let state {
                    current?.fields[FieldName(unchecked: name)] = try decode(state, of: "\(text).\(name)")
                }
            }
            try finish()
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io("\(error)")
        }
    }

    /// Every open conflict, sorted by item and field.
    public func conflicts() throws(StoreError) -> [FieldConflict] {
        try guarded {
            try database.statements { db in
                try db.run(
                    """
                    SELECT i.item_id, f.name, f.state FROM field f JOIN item i ON i.id = f.item
                    WHERE f.conflict ORDER BY i.item_id, f.name
                    """
                ).compactMap { row in
                    let (item, name, bytes) = try row.decode((String, String, ByteBuffer).self)
                    let state = try Self.decode(bytes, of: "\(item).\(name)")
                    guard !state.isEmpty else { return nil }
                    return FieldConflict(item: ItemID(unchecked: item), field: FieldName(unchecked: name), state: state)
                }
            }
        }
    }

    /// Live items, deleted items, fields in conflict.
    public func counts() throws(StoreError) -> (items: Int, deleted: Int, conflicts: Int) {
        try guarded {
            try database.statements { db in
                let row = try db.run(
                    """
                    SELECT (SELECT count(*) FROM item WHERE NOT deleted), (SELECT count(*) FROM item WHERE deleted),
                        (SELECT count(*) FROM field WHERE conflict)
                    """
                )
                let (items, deleted, conflicts) = try row[0].decode((Int, Int, Int).self)
                return (items, deleted, conflicts)
            }
        }
    }

    static func writerIDs(_ db: BlockingPostgres.Statements) throws -> [NodeID] {
        try db.run("SELECT writer_id FROM writer ORDER BY seq").compactMap { NodeID(text: try $0.decode(String.self)) }
    }

    /// The item of row `row` with its fields' states and rows.
    static func loadItem(_ db: BlockingPostgres.Statements, _ id: ItemID, row: Int64) throws -> LoadedItem {
        var fields: [FieldName: FieldState] = [:]
        var rows: [FieldName: Int64] = [:]
        for field in try db.run("SELECT id, name, state FROM field WHERE item = \(row)") {
            let (fieldRow, name, bytes) = try field.decode((Int64, String, ByteBuffer).self)
            fields[FieldName(unchecked: name)] = try decode(bytes, of: "\(id.rawValue).\(name)")
            rows[FieldName(unchecked: name)] = fieldRow
        }
        return LoadedItem(row: row, state: ItemState(id: id, fields: fields), fieldRows: rows)
    }

    /// A field state as stored (the core's encoding); one that does not decode is damage.
    static func decode(_ bytes: ByteBuffer, of field: String) throws -> FieldState {
        do {
            return try FieldState(decoding: Array(bytes.readableBytesView))
        } catch {
            throw damaged("the state of \(field) does not decode: \(error)")
        }
    }

    static func damaged(_ detail: String) -> StoreError { .corrupt(path: "PostgreSQL", detail: detail) }
}
