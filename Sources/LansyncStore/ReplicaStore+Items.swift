import Foundation
import GRDB
public import LansyncCore
import LansyncJSON
public import LansyncReplica

// Reading items: one item, all of them streamed, conflicts, history, node names.
extension ReplicaStore {
    /// The whole replicated state of an item; nil if this replica has never heard of it.
    public func itemState(_ id: ItemID) throws(StoreError) -> ItemState? {
        try guarded {
            try database.read { db in
                let item = try Transaction.loadItem(db: db, id, nodes: nodeRows)
                return item.row == nil ? nil : item.state
            }
        }
    }

    /// The items whose id is `typed` exactly, or else starts with it (as git takes a unique prefix
    /// of a commit id), deleted items included, sorted; at most `limit`. An exact match is the
    /// only one returned, even if longer ids start with it.
    public func itemIDs(matching typed: String, limit: Int = 5) throws(StoreError) -> [ItemID] {
        try guarded {
            try database.read { db in
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM item WHERE item_id = ?", arguments: [typed]) == true {
                    return [ItemID(unchecked: typed)]
                }
                // Ids are ASCII below DEL, so the prefix's range ends before prefix + DEL: an index range.
                return try String.fetchAll(
                    db,
                    sql: "SELECT item_id FROM item WHERE item_id > ? AND item_id < ? ORDER BY item_id LIMIT ?",
                    arguments: [typed, typed + "\u{7F}", limit]
                ).map { ItemID(unchecked: $0) }
            }
        }
    }

    /// An item for display; nil if unknown.
    /// With `withLocalEdits`, it carries ``StoredItem/localEdit``, read in the same pass.
    public func storedItem(_ id: ItemID, withLocalEdits: Bool = false) throws(StoreError) -> StoredItem? {
        var found: StoredItem?
        try forEachItem(only: [id], localWriters: try localWriters(if: withLocalEdits)) { found = $0 }
        return found
    }

    /// This replica's writer ids, whose live versions make an item's ``StoredItem/localEdit``,
    /// when `wanted`.
    private func localWriters(if wanted: Bool) throws(StoreError) -> Set<NodeID>? {
        wanted ? Set(try writers().map(\.id)) : nil
    }

    /// Calls `body` with every item, sorted by id, reading in one snapshot without holding all
    /// items in memory; with `withLocalEdits`, each carries ``StoredItem/localEdit``.
    public func forEachItem(
        type: String? = nil,
        includeDeleted: Bool = false,
        withLocalEdits: Bool = false,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        try forEachItem(
            type: type,
            includeDeleted: includeDeleted,
            only: nil,
            localWriters: try localWriters(if: withLocalEdits),
            body
        )
    }

    /// One page of items, sorted by id: at most `limit`, with ids after `after` (the last id of
    /// the page before). A page shorter than `limit` is the last.
    /// With `withLocalEdits`, each item carries ``StoredItem/localEdit``, read in the same pass.
    public func items(
        type: String? = nil,
        includeDeleted: Bool = false,
        after: ItemID? = nil,
        limit: Int,
        withLocalEdits: Bool = false
    ) throws(StoreError) -> [StoredItem] {
        var page: [StoredItem] = []
        try forEachItem(
            type: type,
            includeDeleted: includeDeleted,
            only: nil,
            after: after,
            limit: limit,
            localWriters: try localWriters(if: withLocalEdits)
        ) { page.append($0) }
        return page
    }

    /// The items with these ids, in this order (deleted ones too; ids with no item are skipped),
    /// read in one snapshot and one statement: a page of a query. With `withLocalEdits`, each
    /// carries ``StoredItem/localEdit``.
    public func items(_ ids: [ItemID], withLocalEdits: Bool = false) throws(StoreError) -> [StoredItem] {
        guard !ids.isEmpty else { return [] }
        var found: [ItemID: StoredItem] = [:]
        try forEachItem(
            only: ids,
            localWriters: try localWriters(if: withLocalEdits)
        ) { found[$0.id] = $0 }
        return ids.compactMap { found[$0] }
    }

    /// Every item (or those of `only`) that passes the conditions, sorted by id. With
    /// `localWriters`, each item's ``StoredItem/localEdit`` is taken from the states read anyway,
    /// which then include the reserved fields' (a delete or a retype is an edit too).
    private func forEachItem(
        type: String? = nil,
        includeDeleted: Bool = true,
        only: [ItemID]?,
        after: ItemID? = nil,
        limit: Int? = nil,
        localWriters: Set<NodeID>? = nil,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        let statement = Self.itemsStatement(
            type: type,
            includeDeleted: includeDeleted,
            only: only,
            after: after,
            limit: limit,
            reserved: localWriters != nil
        )
        try guarded {
            try database.read { db in try readItems(statement, localWriters: localWriters, db: db, body) }
        }
    }

    /// Calls `body` with each item `statement` (``itemsStatement(type:includeDeleted:only:after:limit:reserved:changedAfter:)``)
    /// reads, as it reads it.
    private func readItems(
        _ statement: (sql: String, arguments: [any DatabaseValueConvertible]),
        localWriters: Set<NodeID>?,
        db: Database,
        _ body: (StoredItem) throws -> Void
    ) throws {
        let cursor = try Row.fetchCursor(
            db.cachedStatement(sql: statement.sql),
            arguments: StatementArguments(statement.arguments)
        )
        var reader = StoredItemReader(path: path, localWriters: localWriters, nodes: nodeRows)
        while let row = try cursor.next() {
            if let item = try reader.read(row, db: db) { try body(item) }
        }
        if let item = reader.finish() { try body(item) }
    }

    /// Calls `body` with every item (deleted ones too) with a field numbered in the change feed
    /// after `seq`, or with every item when `seq` is nil, sorted by id; returns where the replica
    /// stood in the same snapshot. What follows the replica (a running node's digest) reads only
    /// what changed since it last looked: every transaction that changes a field gives it a new
    /// feed number, so an item whose fields all have older numbers shows what it showed then.
    /// What that cannot see, an item removed whole (a purge, a rejoin), the marks' item count
    /// and floor can.
    public func forEachItem(
        changedAfter seq: Int64?,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) -> ReplicaMarks {
        let statement = Self.itemsStatement(
            type: nil,
            includeDeleted: true,
            only: nil,
            after: nil,
            limit: nil,
            reserved: false,
            changedAfter: seq
        )
        return try guarded {
            try database.read { db in
                let marks = ReplicaMarks(
                    stamp: try Self.changeStamp(db: db),
                    latestSeq: try Transaction.latestSeq(db: db),
                    floor: try Transaction.feedFloor(db: db),
                    items: try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0
                )
                try readItems(statement, localWriters: nil, db: db, body)
                return marks
            }
        }
    }

    /// The statement ``forEachItem(type:includeDeleted:only:after:limit:localWriters:_:)`` reads
    /// items with: their rows and their fields' (with `reserved`, `_deleted`'s too), by item id;
    /// with `changedAfter`, only items with a field numbered in the feed after it.
    private static func itemsStatement(
        type: String?,
        includeDeleted: Bool,
        only: [ItemID]?,
        after: ItemID?,
        limit: Int?,
        reserved: Bool,
        changedAfter: Int64? = nil
    ) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let changedAfter {
            // field_by_seq from `changedAfter` on: as many rows as changed, not every item.
            conditions.append("i.id IN (SELECT c.item FROM field c WHERE c.seq > ?)")
            arguments.append(changedAfter)
        }
        if let only, only.count == 1 {
            conditions.append("i.item_id = ?")
            arguments.append(only[0].rawValue)
        } else if let only {
            conditions.append("i.item_id IN (SELECT value FROM json_each(?))")
            arguments.append(JSON.array(only.map { .string($0.rawValue) }).text)
        }
        if let after {
            conditions.append("i.item_id > ?")
            arguments.append(after.rawValue)
        }
        if let type {
            conditions.append("i.type = ?")
            arguments.append(type)
        }
        if !includeDeleted { conditions.append("i.deleted = 0") }
        if let limit {
            // The page's items first (the item_id index), then their fields.
            let inner = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            conditions = ["i.id IN (SELECT i.id FROM item i \(inner) ORDER BY i.item_id LIMIT ?)"]
            arguments.append(limit)
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        // `_deleted` is only read for its versions (its value is the item's `deleted` column).
        let sql = """
            SELECT i.item_id, i.type, i.deleted, f.name, f.state, f.conflict FROM item i
            LEFT JOIN field f ON \(FieldRows.of())\(reserved ? "" : " AND f.name <> '_deleted'")
            \(whereClause) ORDER BY i.item_id, f.name
            """
        return (sql, arguments)
    }

    /// Every open conflict, sorted by item and field.
    public func conflicts() throws(StoreError) -> [FieldConflict] {
        try guarded {
            try database.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT i.item_id, f.name, f.state FROM field f JOIN item i ON i.id = f.item
                        WHERE f.conflict = 1 ORDER BY i.item_id, f.name
                        """
                ).compactMap { row in
                    let state = try StoredState.decode(
                        Array((try row.decode(atIndex: 2) as Data)),
                        db: db,
                        nodes: nodeRows
                    )
                    guard !state.isEmpty else { return nil }
                    return FieldConflict(
                        item: ItemID(unchecked: (try row.decode(atIndex: 0))),
                        field: FieldName(unchecked: (try row.decode(atIndex: 1))),
                        state: state
                    )
                }
            }
        }
    }

    /// Every kept version of an item's fields (or of one field), newest first.
    public func history(_ id: ItemID, field: FieldName? = nil) throws(StoreError) -> [HistoryEntry] {
        try guarded {
            try database.read { db in
                var filter = ""
                var arguments: [any DatabaseValueConvertible] = [id.rawValue]
                if let field {
                    filter = " AND f.name = ?"
                    arguments.append(field.rawValue)
                }
                // The live versions are in the field states; history holds the others (Transaction.recordHistory).
                let live = try liveVersions(db, filter: filter, arguments: StatementArguments(arguments))
                let kept = try Self.keptVersions(db, filter: filter, arguments: StatementArguments(arguments))
                let liveDots = Set(live.map { HistoryEntry.Key(field: $0.field, dot: $0.dot) })
                let entries = try Self.markSigned(
                    live + kept.filter { !liveDots.contains(HistoryEntry.Key(field: $0.field, dot: $0.dot)) },
                    db: db
                )
                // Newest first; one edit's fields (one dot) in field name order.
                return entries.sorted {
                    let (a, b) = (
                        ($0.timestamp, $0.dot.node.text, $0.dot.counter),
                        ($1.timestamp, $1.dot.node.text, $1.dot.counter)
                    )
                    return a != b ? a > b : $0.field < $1.field
                }
            }
        }
    }

    /// `entries`, each marked signed if a held run holds its dot (Docs/SECURITY.md, "Signed writes").
    private static func markSigned(_ entries: [HistoryEntry], db: Database) throws -> [HistoryEntry] {
        let last = try db.cachedStatement(
            sql: """
                SELECT r.last FROM signed_run r JOIN node n ON n.id = r.node WHERE n.node_id = ? AND r.first <= ?
                ORDER BY r.first DESC LIMIT 1
                """
        )
        var signed: [Dot: Bool] = [:]
        return try entries.map { entry in
            if let known = signed[entry.dot] { return entry.signed(known) }
            let counter = Int64(clamping: entry.dot.counter)
            let held =
                try Int64.fetchOne(last, arguments: [entry.dot.node.text, counter]).map { $0 >= counter } ?? false
            signed[entry.dot] = held
            return entry.signed(held)
        }
    }

    /// The versions the fields (of an item, by `filter`) show or keep as siblings now, from their states.
    private func liveVersions(
        _ db: Database,
        filter: String,
        arguments: StatementArguments
    ) throws -> [HistoryEntry] {
        let names = try Dictionary(
            Row.fetchAll(db, sql: "SELECT node_id, name FROM node WHERE name IS NOT NULL").map {
                (try $0.decode(atIndex: 0) as String, try $0.decode(atIndex: 1) as String)
            },
            uniquingKeysWith: { first, _ in first }
        )
        var entries: [HistoryEntry] = []
        let sql = "SELECT f.name, f.state FROM field f JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ?" + filter
        for row in try Row.fetchAll(db, sql: sql, arguments: arguments) {
            let name = FieldName(unchecked: try row.decode(atIndex: 0))
            let state = try StoredState.decode(Array(try row.decode(atIndex: 1) as Data), db: db, nodes: nodeRows)
            entries += state.versions.map { version in
                HistoryEntry(
                    field: name,
                    dot: version.dot,
                    writerName: names[version.dot.node.text],
                    timestamp: version.timestamp,
                    write: version.write,
                    isLive: true
                )
            }
        }
        return entries
    }

    /// The versions the `history` table keeps for the fields (of an item, by `filter`): those
    /// newer writes superseded (and, for a while, some still live: the caller leaves those out).
    private static func keptVersions(
        _ db: Database,
        filter: String,
        arguments: StatementArguments
    ) throws -> [HistoryEntry] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT f.name, n.node_id, n.name, h.counter, h.timestamp, h.write
                FROM history h JOIN field f ON f.id = h.field JOIN node n ON n.id = h.node
                JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ?
                """ + filter,
            arguments: arguments
        )
        return try rows.compactMap { row in
            guard let node = NodeID(text: (try row.decode(atIndex: 1))),
                let write = FieldVersion.Write(historyText: try row.decode(atIndex: 5))
            else { return nil }
            return HistoryEntry(
                field: FieldName(unchecked: try row.decode(atIndex: 0)),
                dot: Dot(node: node, counter: UInt64((try row.decode(atIndex: 3) as Int64))),
                writerName: try row.decode(atIndex: 2),
                timestamp: HLCTimestamp(rawValue: UInt64((try row.decode(atIndex: 4) as Int64))),
                write: write,
                isLive: false
            )
        }
    }

    /// The names of the nodes this replica knows, by id.
    public func nodeNames() throws(StoreError) -> [NodeID: String] {
        try guarded {
            try database.read { db in
                var names: [NodeID: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT node_id, name FROM node WHERE name IS NOT NULL") {
                    if let id = NodeID(text: (try row.decode(atIndex: 0))) { names[id] = (try row.decode(atIndex: 1)) }
                }
                return names
            }
        }
    }

    /// `PRAGMA integrity_check`: "ok", or SQLite's description of the damage.
    public func integrityCheck() throws(StoreError) -> String {
        try guarded {
            try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
        }
    }
}
