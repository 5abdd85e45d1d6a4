import Foundation
import GRDB
import LansyncCore
import LansyncReplica

// A page of a query with no filter (the web page's pages: a type, deleted ones or not, a
// search) read in its order from an index and stopped once full, instead of reading every
// item and sorting: by id from `item`'s own index, by an indexed field from `query_index`,
// one kind of value after another in ``ItemQuery``'s order. Where the index cannot give that
// order exactly (a list value, which has no typed row; a number a double cannot hold exactly;
// a NaN) the walk declines and the query reads every item, so an index only makes it faster.

/// Which items a walk may show: their type, deleted ones or not, a search checked item by item.
struct ItemScope {
    var type: String?
    var includeDeleted: Bool
    var search: ItemSearch?
    /// The items whose texts are stale, and those of them `search` matches.
    var overlay = SearchOverlay()

    /// Conditions on `item i`.
    var conditions: (sql: [String], arguments: [any DatabaseValueConvertible]) {
        var sql: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let type {
            sql.append("i.type = ?")
            arguments.append(type)
        }
        if !includeDeleted { sql.append("i.deleted = 0") }
        if let search {
            let condition = ReplicaStore.searchCondition(search, overlay: overlay)
            sql.append(condition.sql)
            arguments += condition.arguments
        }
        return (sql, arguments)
    }
}

extension ReplicaStore {
    typealias OrderedEntry = (value: Value?, id: String)

    /// Up to `count` entries of a query without filters in `sort`'s order after `start`; nil if
    /// an index cannot give that order (the caller reads every item instead).
    func walk(
        sort: ItemQuery.Sort?,
        _ scope: ItemScope,
        after start: OrderedEntry?,
        count: Int,
        db: Database
    ) throws -> [OrderedEntry]? {
        guard let sort else {
            return try missing(field: nil, scope, after: start?.id, count: count, db: db).map { (nil, $0) }
        }
        guard try Self.walkable(sort.field, db: db) else { return nil }
        // The kinds in the order they come (ItemQuery.rank): missing, bool, number, string, link,
        // and lists, which a walkable field has none of (a page's end may still be one).
        var groups = [0, 1, 2, 3, 4, 5]
        if sort.descending { groups.reverse() }
        let startRank = start.map { ItemQuery.rank($0.value) }
        var found: [OrderedEntry] = []
        for rank in groups where rank != 5 {
            if let startRank, groups.firstIndex(of: rank)! < groups.firstIndex(of: startRank)! { continue }
            let from = rank == startRank ? start : nil
            let left = count - found.count
            if rank == 0 {
                found += try missing(field: sort.field, scope, after: from?.id, count: left, db: db).map { (nil, $0) }
            } else {
                found += try values(rank: rank, sort, scope, after: from, count: left, db: db)
            }
            if found.count >= count { break }
        }
        return found
    }

    /// Whether `field` is indexed and every value its index holds orders there as in ``ItemQuery``.
    static func walkable(_ field: FieldName, db: Database) throws -> Bool {
        guard
            try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM indexed_field WHERE name = ?)",
                arguments: [field.rawValue]
            ) == true
        else { return false }
        let exact = 9_007_199_254_740_992.0  // 2^53: past it a double skips integers
        let odd = try Bool.fetchOne(
            db,
            sql: """
                SELECT EXISTS (SELECT 1 FROM query_index WHERE field = ?1 AND element = 0 AND kind = 4)
                    OR EXISTS (SELECT 1 FROM query_index WHERE field = ?1 AND element = 0 AND kind = 2 AND num IS NULL)
                    OR EXISTS (SELECT 1 FROM query_index WHERE field = ?1 AND element = 0 AND kind = 2 AND num >= ?2)
                    OR EXISTS (SELECT 1 FROM query_index WHERE field = ?1 AND element = 0 AND kind = 2 AND num <= -?2)
                """,
            arguments: [field.rawValue, exact]
        )
        return odd == false
    }

    /// Ids of the items in scope without a value of `field` (none, or null; every item if nil),
    /// in id order, after `after`.
    private func missing(
        field: FieldName?,
        _ scope: ItemScope,
        after: String?,
        count: Int,
        db: Database
    ) throws -> [String] {
        guard count > 0 else { return [] }
        if let field, try Self.everyItemHolds(field, db: db) { return [] }
        var (conditions, arguments) = scope.conditions
        if let field {
            conditions.append(
                """
                NOT EXISTS (SELECT 1 FROM query_index q WHERE q.item = i.id AND q.field = ? \
                AND q.element = 0 AND q.kind <> 0)
                """
            )
            arguments.append(field.rawValue)
        }
        if let after {
            conditions.append("i.item_id > ?")
            arguments.append(after)
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try String.fetchAll(
            db,
            sql: "SELECT i.item_id FROM item i \(filter) ORDER BY i.item_id LIMIT \(count)",
            arguments: StatementArguments(arguments)
        )
    }

    /// Whether every item has a value of `field` other than null (two counts of indexes): then
    /// none sorts as missing, and finding none would read every item.
    static func everyItemHolds(_ field: FieldName, db: Database) throws -> Bool {
        let items = try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0
        // At most one row per item: reindexing a field deletes its rows first.
        let held =
            try Int.fetchOne(
                db,
                sql: "SELECT count(*) FROM query_index WHERE field = ? AND element = 0 AND kind <> 0",
                arguments: [field.rawValue]
            ) ?? 0
        return held >= items
    }

    /// The items in scope whose value of the sort field is of the kind ranked `rank`, in order.
    private func values(
        rank: Int,
        _ sort: ItemQuery.Sort,
        _ scope: ItemScope,
        after start: OrderedEntry?,
        count: Int,
        db: Database
    ) throws -> [OrderedEntry] {
        guard count > 0 else { return [] }
        // query_index kinds: 1 bool, 2 number, 3 string, 5 link (Transaction.indexRows).
        let kind = [1: 1, 2: 2, 3: 3, 4: 5][rank]!
        let column = kind <= 2 ? "num" : "txt"
        var (conditions, arguments) = scope.conditions
        var sqlConditions = ["q.field = ?", "q.element = 0", "q.kind = \(kind)"]
        var sqlArguments: [any DatabaseValueConvertible] = [sort.field.rawValue]
        if let start, let value = Self.indexed(start.value) {
            let (past, upTo) = sort.descending ? ("<", "<=") : (">", ">=")
            sqlConditions.append("q.\(column) \(upTo) ? AND (q.\(column) \(past) ? OR i.item_id > ?)")
            sqlArguments += [value, value, start.id]
        }
        conditions = sqlConditions + conditions
        arguments = sqlArguments + arguments
        // The index's order drives the walk (CROSS JOIN keeps query_index outside), ties by id.
        let index = column == "num" ? "query_by_num" : "query_by_txt"
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT i.item_id, q.\(column) FROM query_index q INDEXED BY \(index) CROSS JOIN item i ON i.id = q.item
                WHERE \(conditions.joined(separator: " AND "))
                ORDER BY q.\(column) \(sort.descending ? "DESC" : "ASC"), i.item_id LIMIT \(count)
                """,
            arguments: StatementArguments(arguments)
        )
        return try rows.map { row in
            let id: String = try row.decode(atIndex: 0)
            let value: Value =
                switch kind {
                case 1: .bool((try row.decode(atIndex: 1) as Double) != 0)
                case 2: .double(try row.decode(atIndex: 1))
                case 3: .string(try row.decode(atIndex: 1))
                default: .ref(ItemID(unchecked: try row.decode(atIndex: 1)))
                }
            return (value, id)
        }
    }

    /// A value as its index row holds it (num or txt).
    private static func indexed(_ value: Value?) -> (any DatabaseValueConvertible)? {
        switch value {
        case .bool(let b)?: b ? 1.0 : 0.0
        case .integer?, .double?: value?.number
        case .string(let s)?: s
        case .ref(let id)?: id.rawValue
        default: nil
        }
    }
}
