import Foundation
import GRDB
public import LansyncCore
import LansyncJSON
public import LansyncReplica

// Queries over shown values (``ItemQuery``). A field is either indexed (`lansync index FIELD`:
// table `query_index` holds its typed shown value, a row per list element, kept in step by the
// code that saves fields) or not: then its states are read and decoded, one field per item. The
// first filter on an indexed field picks the candidates with one index range; every filter is
// then checked exactly on the candidates' values, so an index only ever makes a query faster.

/// A query that cannot be answered as asked (a bad cursor): what to do instead.
public struct QueryError: CodedError, Sendable {
    public let description: String
    public var code: ErrorCode { .badInput }
    init(_ description: String) { self.description = description }
}

/// One page of a query's results, and where the next one starts.
public struct QueryPage: Sendable {
    public let items: [StoredItem]
    /// Pass as `after` for the next page; nil on the last.
    public let next: String?
}

extension Transaction {
    /// The index rows of a shown value: (kind, element, number, text). Kinds: 0 null, 1 bool,
    /// 2 number, 3 string, 4 list (whose elements get rows of their own, element 1), 5 link (its
    /// target's id as text).
    static func indexRows(_ value: Value?) -> [(kind: Int, element: Int, num: Double?, txt: String?)] {
        func row(_ v: Value, element: Int) -> (Int, Int, Double?, String?) {
            switch v {
            case .null: (0, element, nil, nil)
            case .bool(let b): (1, element, b ? 1 : 0, nil)
            case .integer(let n): (2, element, Double(n), nil)
            case .double(let d): (2, element, d.isNaN ? nil : d, nil)
            case .string(let s): (3, element, nil, s)
            case .list: (4, element, nil, nil)
            case .ref(let id): (5, element, nil, id.rawValue)
            }
        }
        guard let value else { return [] }
        if case .list(let elements) = value {
            return [row(value, element: 0)]
                + elements.filter { if case .list = $0 { false } else { true } }
                .map { row($0, element: 1) }
        }
        return [row(value, element: 0)]
    }

    /// Brings `query_index` in step with a saved field, if its name is indexed.
    mutating func indexField(item: Int64, name: FieldName, new: FieldState) throws {
        if indexedNames == nil {
            indexedNames = Set(try String.fetchAll(db, sql: "SELECT name FROM indexed_field"))
        }
        guard indexedNames!.contains(name.rawValue) else { return }
        try Self.reindex(item: item, name: name.rawValue, value: new.shownValue, db: db)
    }

    /// Brings `item_link` in step with a saved field: one row per link its shown value holds.
    mutating func linkField(item: Int64, name: FieldName, old: FieldState?, new: FieldState) throws {
        guard !name.isReserved else { return }
        let before = old?.shownValue?.links ?? []
        let after = new.shownValue?.links ?? []
        guard before != after else { return }
        if !before.isEmpty {
            try db.cachedStatement(sql: "DELETE FROM item_link WHERE item = ? AND field = ?")
                .execute(arguments: [item, name.rawValue])
        }
        for target in Set(after) {
            try db.cachedStatement(sql: "INSERT INTO item_link(item, field, target) VALUES (?, ?, ?)")
                .execute(arguments: [item, name.rawValue, target.rawValue])
        }
    }

    static func reindex(item: Int64, name: String, value: Value?, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM query_index WHERE item = ? AND field = ?")
            .execute(arguments: [item, name])
        for row in indexRows(value) {
            try db.cachedStatement(
                sql: "INSERT INTO query_index(field, item, kind, element, num, txt) VALUES (?, ?, ?, ?, ?, ?)"
            ).execute(arguments: [name, item, row.kind, row.element, row.num, row.txt])
        }
    }
}

extension ReplicaStore {
    /// The indexed fields, each with how many items hold it.
    public func indexedFields() throws(StoreError) -> [(field: FieldName, items: Int)] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT x.name, (SELECT count(DISTINCT item) FROM query_index q WHERE q.field = x.name)
                    FROM indexed_field x ORDER BY x.name
                    """
            ).map { (FieldName(unchecked: $0[0]), $0[1]) }
        }
    }

    /// The indexed fields' names, sorted (without counting their items).
    public func indexedFieldNames() throws(StoreError) -> [FieldName] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT name FROM indexed_field ORDER BY name").map(FieldName.init(unchecked:))
        }
    }

    /// How many items of each type there are, live and deleted, by type: all of them counted in
    /// the `item_by_type` index alone, the deleted ones through the two partial indexes that hold
    /// them (deleted, collected), so the item rows are read for deleted items only (100,000 live
    /// items: 6 ms, where one pass over the rows took 26).
    public func typeCounts() throws(StoreError) -> [(type: String, live: Int, deleted: Int)] {
        try read { db in
            let all = try Row.fetchAll(db, sql: "SELECT type, count(*) FROM item GROUP BY type ORDER BY type")
            var deleted: [String: Int] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT type, count(*) FROM item WHERE deleted = 1 AND collected = 0 GROUP BY type
                    UNION ALL SELECT type, count(*) FROM item WHERE collected <> 0 AND deleted = 1 GROUP BY type
                    """
            ) {
                deleted[try row.decode(atIndex: 0), default: 0] += try row.decode(atIndex: 1)
            }
            return try all.map { row in
                let type: String = try row.decode(atIndex: 0)
                let gone = deleted[type] ?? 0
                return (type, try row.decode(atIndex: 1) - gone, gone)
            }
        }
    }

    /// Indexes `field` (every item's value now, and every later change); nothing if it is already.
    public func addIndex(_ field: FieldName) throws(StoreError) {
        try guarded {
            try database.write { db in
                try db.execute(sql: "INSERT OR IGNORE INTO indexed_field(name) VALUES (?)", arguments: [field.rawValue])
                guard db.changesCount > 0 else { return }
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT item, state FROM field WHERE name = ?",
                    arguments: [field.rawValue]
                )
                for row in rows {
                    let state = try StoredState.decode(Array(row[1] as Data), db: db, nodes: nodeRows)
                    try Transaction.reindex(item: row[0], name: field.rawValue, value: state.shownValue, db: db)
                }
            }
        }
    }

    /// Stops indexing `field`; true if it was indexed.
    @discardableResult
    public func dropIndex(_ field: FieldName) throws(StoreError) -> Bool {
        try guarded {
            try database.write { db in
                try db.execute(sql: "DELETE FROM indexed_field WHERE name = ?", arguments: [field.rawValue])
                let dropped = db.changesCount > 0
                try db.execute(sql: "DELETE FROM query_index WHERE field = ?", arguments: [field.rawValue])
                return dropped
            }
        }
    }

    /// The items that pass `query` (of `type`, deleted ones only with `includeDeleted`, those
    /// `search` matches), in its order, at most `limit`, after the page that ended with `after`.
    /// With `withLocalEdits`, each item carries ``StoredItem/localEdit``.
    ///
    /// Without filters, a page is read in its order from an index and the read stops once it is
    /// full (by id, or by an indexed field: ``walk(sort:_:after:count:db:)``); otherwise, and
    /// when sorting by a field that is not indexed, every candidate's values are read and sorted.
    public func query(
        _ query: ItemQuery,
        type: String? = nil,
        includeDeleted: Bool = false,
        search: ItemSearch? = nil,
        limit: Int,
        after: String? = nil,
        withLocalEdits: Bool = false
    ) throws -> QueryPage {
        try self.query(
            query,
            type: type,
            includeDeleted: includeDeleted,
            search: search,
            limit: limit,
            after: after,
            withLocalEdits: withLocalEdits,
            commonSearch: Self.searchCandidateLimit
        )
    }

    /// ``query(_:type:includeDeleted:search:limit:after:withLocalEdits:)`` with a search counted
    /// common past `commonSearch` matches, and the search texts caught up first past
    /// `overlayLimit` stale items (tests take every way on a small replica).
    func query(
        _ query: ItemQuery,
        type: String?,
        includeDeleted: Bool,
        search: ItemSearch?,
        limit: Int,
        after: String?,
        withLocalEdits: Bool,
        commonSearch: Int,
        overlayLimit: Int = searchOverlayLimit
    ) throws -> QueryPage {
        let start = try after.map(Self.cursor(from:))
        let wanted = limit == .max ? limit : limit + 1  // one more says whether a next page exists
        if search != nil { try prepareSearch(overlayLimit: overlayLimit) }
        let page = try read { db -> [OrderedEntry] in
            var candidates = try self.candidates(query, db: db)
            var scope = ItemScope(type: type, includeDeleted: includeDeleted, search: nil)
            if let search {
                let overlay = try Self.searchOverlay(search, db: db, nodes: nodeRows)
                if let found = try Self.searchCandidates(search, overlay: overlay, limit: commonSearch, db: db) {
                    candidates = candidates.map { Array(Set($0).intersection(found)) } ?? found
                } else {
                    scope.search = search
                    scope.overlay = overlay
                }
            }
            if candidates == nil, query.filters.isEmpty,
                let walked = try walk(sort: query.sort, scope, after: start, count: wanted, db: db)
            {
                return walked
            }
            let ordered = try gather(query, scope, candidates: candidates, db: db)
            return Array(
                (start.map { start in ordered.filter { query.precedes(start, $0) } } ?? ordered).prefix(wanted)
            )
        }
        let taken = Array(page.prefix(limit))
        let items = try self.items(taken.map { ItemID(unchecked: $0.id) }, withLocalEdits: withLocalEdits)
        let next = page.count > limit ? taken.last.map { Self.cursor(for: $0) } : nil
        return QueryPage(items: items, next: next)
    }

    /// Every item in scope among `candidates` (nil: every item) that passes `query`, with its
    /// sort value, in the query's order: each needed field's state read and decoded.
    private func gather(
        _ query: ItemQuery,
        _ scope: ItemScope,
        candidates: [Int64]?,
        db: Database
    ) throws -> [OrderedEntry] {
        var items: [Int64: (id: String, values: [FieldName: Value])] = [:]
        var (conditions, arguments) = scope.conditions
        let candidateList = candidates.map { "[" + $0.map(String.init).joined(separator: ",") + "]" }
        if let candidateList {
            conditions.append("i.id IN (SELECT value FROM json_each(?))")
            arguments.append(candidateList)
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        for row in try Row.fetchAll(
            db,
            sql: "SELECT i.id, i.item_id FROM item i \(whereClause)",
            arguments: StatementArguments(arguments)
        ) {
            items[row[0]] = (row[1], [:])
        }
        let names = Set(query.filters.map(\.field) + (query.sort.map { [$0.field] } ?? []))
        for name in names {
            let sql =
                candidates == nil
                ? "SELECT item, state FROM field WHERE name = ?"
                : """
                SELECT f.item, f.state FROM json_each(?2) c JOIN field f
                ON \(FieldRows.of(item: "c.value"))
                WHERE f.name = ?1
                """
            var args: [(any DatabaseValueConvertible)?] = [name.rawValue]
            if let candidateList { args.append(candidateList) }
            for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(args)) {
                let item: Int64 = row[0]
                guard items[item] != nil else { continue }
                let state = try StoredState.decode(Array(row[1] as Data), db: db, nodes: nodeRows)
                if let value = state.shownValue { items[item]!.values[name] = value }
            }
        }
        let passing = items.values.filter { query.matches($0.values) }
            .map { item in (value: query.sort.flatMap { item.values[$0.field] }, id: item.id) }
        return passing.sorted { query.precedes($0, $1) }
    }

    /// Which index, if any, a query's candidates come from, and SQLite's plan for reading them:
    /// what `list --explain` prints, and what tests check.
    public func queryPlan(_ query: ItemQuery) throws -> String {
        try read { db in
            guard let (filter, sql, arguments) = try Self.indexedFilter(query, db: db) else {
                return "no filter on an indexed field: every item's values are read ('lansync index FIELD' indexes one)"
            }
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments)
                .map { $0["detail"] as String }.joined(separator: "; ")
            return "candidates from the index on \(filter.field.rawValue) (\(filter.op.rawValue)): \(plan)"
        }
    }

    // MARK: Candidates

    /// The items a query can only find among (nil: every item): from an index, or else from one
    /// pass over the values of a field a filter needs (one that no item without the field
    /// passes), keeping the items whose value passes that field's filters. Every filter is still
    /// checked on the candidates' values afterwards.
    func candidates(_ query: ItemQuery, db: Database) throws -> [Int64]? {
        if let (_, sql, arguments) = try Self.indexedFilter(query, db: db) {
            return try Int64.fetchAll(db, sql: sql, arguments: arguments)
        }
        guard let field = query.filters.first(where: { !$0.matches(nil) })?.field else { return nil }
        let filters = query.filters.filter { $0.field == field }
        // A string a passing value must hold (=, prefix, contains) is stored as its UTF-8 bytes
        // in the field's state, and strings compare byte by byte: a state without those bytes
        // cannot pass, and is not decoded.
        let needles = filters.compactMap { filter -> [UInt8]? in
            guard [.equal, .prefix, .contains].contains(filter.op), case .string(let text)? = filter.value,
                !text.isEmpty
            else { return nil }
            return Array(text.utf8)
        }
        var found: [Int64] = []
        let rows = try Row.fetchCursor(
            db,
            sql: "SELECT item, state FROM field WHERE name = ?",
            arguments: [field.rawValue]
        )
        while let row = try rows.next() {
            let bytes = try row.withUnsafeData(atIndex: 1) { data -> [UInt8]? in
                guard let data else { return [] }
                let passes = data.withUnsafeBytes { state in needles.allSatisfy { Self.bytes(state, contain: $0) } }
                return passes ? Array(data) : nil
            }
            guard let bytes else { continue }
            let shown = try StoredState.decode(bytes, db: db, nodes: nodeRows).shownValue
            if filters.allSatisfy({ $0.matches(shown) }) { found.append(row[0]) }
        }
        return found
    }

    /// Whether `needle` occurs in `haystack`: `memchr` to its first byte, then `memcmp`. Foundation's
    /// `Data.range(of:)` took three quarters of an unindexed query's time.
    static func bytes(_ haystack: UnsafeRawBufferPointer, contain needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
        let last = haystack.count - needle.count
        return needle.withUnsafeBytes { n in
            var offset = 0
            while offset <= last {
                guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { return false }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, n.baseAddress!, needle.count) == 0 { return true }
                offset = at + 1
            }
            return false
        }
    }

    /// The first filter an index can answer, with the statement that does.
    static func indexedFilter(
        _ query: ItemQuery,
        db: Database
    ) throws
        -> (ItemQuery.Filter, String, StatementArguments)?
    {
        let indexed = Set(try String.fetchAll(db, sql: "SELECT name FROM indexed_field"))
        for filter in query.filters where indexed.contains(filter.field.rawValue) {
            guard let (condition, values) = condition(filter) else { continue }
            let sql = "SELECT DISTINCT item FROM query_index WHERE field = ? AND \(condition)"
            return (filter, sql, StatementArguments([filter.field.rawValue] + values))
        }
        return nil
    }

    /// The index condition for a filter, or nil if the index cannot narrow it (!=, missing, a
    /// null or list value).
    static func condition(_ filter: ItemQuery.Filter) -> (String, [(any DatabaseValueConvertible)?])? {
        let comparisons: [ItemQuery.Filter.Operator: String] = [
            .equal: "=", .less: "<", .lessOrEqual: "<=", .greater: ">", .greaterOrEqual: ">=",
        ]
        switch (filter.op, filter.value) {
        case (.exists, _): return ("element = 0 AND kind <> 0", [])
        case (.prefix, .string(let start)?):
            guard let last = start.unicodeScalars.last else { return ("element = 0 AND kind = 3", []) }
            guard let next = Unicode.Scalar(last.value == 0xD7FF ? 0xE000 : last.value + 1) else {
                return ("element = 0 AND kind = 3 AND txt >= ?", [start])
            }
            let upper = String(start.unicodeScalars.dropLast()) + String(Character(next))
            return ("element = 0 AND kind = 3 AND txt >= ? AND txt < ?", [start, upper])
        case (.contains, let value?):
            switch value {
            case .bool(let b): return ("element = 1 AND kind = 1 AND num = ?", [b ? 1.0 : 0.0])
            case .integer, .double: return ("element = 1 AND kind = 2 AND num = ?", [value.number])
            case .string(let s): return ("element = 1 AND kind = 3 AND txt = ?", [s])
            case .ref(let id): return ("element = 1 AND kind = 5 AND txt = ?", [id.rawValue])
            default: return nil
            }
        case (let op, let value?):
            guard let sign = comparisons[op] else { return nil }
            switch value {
            case .integer, .double:
                guard let n = value.number, !n.isNaN else { return nil }
                return ("element = 0 AND kind = 2 AND num \(sign) ?", [n])
            case .string(let s): return ("element = 0 AND kind = 3 AND txt \(sign) ?", [s])
            case .bool(let b) where op == .equal: return ("element = 0 AND kind = 1 AND num = ?", [b ? 1.0 : 0.0])
            case .ref(let id) where op == .equal: return ("element = 0 AND kind = 5 AND txt = ?", [id.rawValue])
            default: return nil
            }
        default: return nil
        }
    }

    // MARK: Cursors

    /// A page's end as text: its sort value and id (JSON, then base64url), opaque to clients, who
    /// pass it back as `after` with the same query.
    static func cursor(for entry: (value: Value?, id: String)) -> String {
        let json = JSON.array([entry.value?.json ?? .null, .string(entry.id)]).text
        return Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func cursor(from text: String) throws -> (value: Value?, id: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let json = try? JSON(parsing: String(decoding: data, as: UTF8.self)),
            case .array(let pair) = json, pair.count == 2, case .string(let id) = pair[1]
        else {
            throw QueryError(
                "'\(text.prefix(40))' is not a page cursor: pass the 'next' of the page before, with the same query"
            )
        }
        let value = pair[0].value
        return (value == .null ? nil : value, id)
    }
}

extension ReplicaStore {
    /// The live items with a field whose shown value links to `target`, and those fields, by
    /// item id (the `item_link` index: no state is read).
    public func itemsLinking(to target: ItemID) throws(StoreError) -> [(item: ItemID, fields: [FieldName])] {
        try read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT i.item_id, l.field FROM item_link l JOIN item i ON i.id = l.item
                    WHERE l.target = ? AND i.deleted = 0 ORDER BY i.item_id, l.field
                    """,
                arguments: [target.rawValue]
            )
            var result: [(item: ItemID, fields: [FieldName])] = []
            for row in rows {
                let id = ItemID(unchecked: row[0])
                let field = FieldName(unchecked: row[1])
                if result.last?.item == id {
                    result[result.count - 1].fields.append(field)
                } else {
                    result.append((id, [field]))
                }
            }
            return result
        }
    }

    /// Every link a live item holds whose target is not a live item here: (item, field, target,
    /// whether the target is deleted; false: missing). The links are read first (`CROSS JOIN`
    /// fixes the order): left to itself SQLite walked every item in id order to find the few
    /// that link (100,000 items and no link: 15 ms for each look of the page).
    public func danglingLinks() throws(StoreError) -> [(item: ItemID, field: FieldName, target: ItemID, deleted: Bool)]
    {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT i.item_id, l.field, l.target, t.deleted FROM item_link l CROSS JOIN item i ON i.id = l.item
                    LEFT JOIN item t ON t.item_id = l.target
                    WHERE i.deleted = 0 AND (t.id IS NULL OR t.deleted = 1 OR t.collected <> 0)
                    ORDER BY i.item_id, l.field, l.target
                    """
            ).map { row in
                let deleted: Bool? = row[3]
                return (
                    ItemID(unchecked: row[0]), FieldName(unchecked: row[1]), ItemID(unchecked: row[2]), deleted == true
                )
            }
        }
    }
}
