import Foundation
import GRDB
import LansyncCore

// Searches (``ItemSearch``): every item's text (its id, type, field names and shown values, case
// folded) is a row of `item_search`, an FTS5 table with the trigram tokenizer, whose row id is
// the item's row. A word of three characters or more is looked up in the trigram index; a
// shorter one reads the texts. SQLite's GLOB checks each word on the text itself, so the
// answer is exact whichever way it was found. The text is rebuilt once per item a transaction
// touched, just before it commits.

extension Transaction {
    /// Notes that `item`'s text may change: a field of it was saved with this shown value.
    /// Past ``searchBatch`` items the texts noted so far are written first (an import is one
    /// transaction: holding every item's values to its end would hold the whole input); an item
    /// saved again after that is noted again, and what was saved is read back.
    mutating func noteSearchChange(item: Int64, name: FieldName, shown: Value?) throws {
        if searchChanges[item] == nil, searchChanges.count >= Self.searchBatch {
            try refreshSearchTexts()
        }
        if name.isReserved {
            if searchChanges[item] == nil { searchChanges[item] = [:] }
        } else {
            searchChanges[item, default: [:]].updateValue(shown, forKey: name)
        }
    }

    static let searchBatch = 512

    /// Brings `item_search` in step with the items this transaction touched (before it commits,
    /// and when a batch is full): the fields it saved are taken as saved, the others read.
    mutating func refreshSearchTexts() throws {
        for (item, known) in searchChanges {
            try Self.refreshSearchText(item: item, known: known, db: db, nodes: nodes)
        }
        searchChanges = [:]
    }

    /// Writes `item`'s text if it changed (removes it if the item is gone). `known`: shown values
    /// already at hand, by field name; any other field's state is read and decoded.
    static func refreshSearchText(item: Int64, known: [FieldName: Value?], db: Database, nodes: NodeRows) throws {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT item_id, type FROM item WHERE id = ?"),
                arguments: [item]
            )
        else {
            try db.cachedStatement(sql: "DELETE FROM item_search WHERE rowid = ?").execute(arguments: [item])
            return
        }
        var fields: [(name: FieldName, value: Value?)] = []
        let cursor = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT name, state FROM field WHERE item = ?"),
            arguments: [item]
        )
        while let field = try cursor.next() {
            let name = FieldName(unchecked: try field.decode(atIndex: 0))
            guard !name.isReserved else { continue }
            if let value = known[name] {
                fields.append((name, value))
            } else {
                let bytes = try field.withUnsafeData(atIndex: 1) { data in data.map(Array.init) ?? [] }
                fields.append((name, try StoredState.decode(bytes, db: db, nodes: nodes).shownValue))
            }
        }
        let text = ItemSearch.text(
            id: ItemID(unchecked: try row.decode(atIndex: 0)),
            type: try row.decode(atIndex: 1),
            fields: fields
        )
        let old = try String.fetchOne(
            db.cachedStatement(sql: "SELECT text FROM item_search WHERE rowid = ?"),
            arguments: [item]
        )
        guard old != text else { return }
        try db.cachedStatement(sql: "REPLACE INTO item_search(rowid, text) VALUES (?, ?)")
            .execute(arguments: [item, text])
    }
}

extension ReplicaStore {
    /// Past this many matches a search is common: a query walks its order and checks each
    /// item's text, which soon finds a page, instead of gathering every match first.
    static let searchCandidateLimit = 2000

    /// The GLOB pattern that finds `word` anywhere in a text: `*`, `?` and `[` stand for
    /// themselves in brackets.
    static func globPattern(_ word: String) -> String {
        var pattern = "*"
        for character in word {
            switch character {
            case "*", "?", "[": pattern += "[\(character)]"
            default: pattern.append(character)
            }
        }
        return pattern + "*"
    }

    /// The items `search` matches, by row, if there are at most `limit`; nil if there are more.
    ///
    /// The longest word goes to the trigram index as a GLOB, the others are checked on the texts
    /// it finds: SQLite 3.40 (Debian 12's) crashes on two GLOBs over a trigram table when the
    /// first is shorter than a trigram, and one well-chosen lookup is all the index can do anyway.
    static func searchCandidates(_ search: ItemSearch, limit: Int, db: Database) throws -> [Int64]? {
        let longest = search.words.max { $0.unicodeScalars.count < $1.unicodeScalars.count }!
        let others = search.words.filter { $0 != longest }
        let conditions = ["text GLOB ?"] + others.map { _ in "instr(text, ?) > 0" }
        let rows = try Int64.fetchAll(
            db,
            sql: "SELECT rowid FROM item_search WHERE \(conditions.joined(separator: " AND ")) LIMIT \(limit + 1)",
            arguments: StatementArguments([globPattern(longest)] + others)
        )
        return rows.count > limit ? nil : rows
    }

    /// A condition on `item i` that holds when `search` matches it, checked item by item (the
    /// text read by row id): for walks over a common search.
    static func searchCondition(_ search: ItemSearch) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
        let sql = search.words.map { _ in
            "instr((SELECT s.text FROM item_search s WHERE s.rowid = i.id), ?) > 0"
        }.joined(separator: " AND ")
        return (sql, search.words)
    }
}
