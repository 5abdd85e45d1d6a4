import Foundation
import GRDB
import LansyncCore
public import LansyncReplica

// Searches (``ItemSearch``): every item's text (its id, type, field names and shown values, case
// folded) is a row of `item_search`, an FTS5 table with the trigram tokenizer, whose row id is
// the item's row. A word whose longest run without GLOB's wildcards has three characters or
// more is looked up in the trigram index (that run, ``ReplicaStore/indexKey(_:)``); a shorter one
// reads the texts. `instr` checks each word on the text itself, so the answer is exact whichever
// way it was found.
//
// The texts are kept off the write path: meta 'search_seq' is the change-feed number up to
// which `item_search` reflects the fields. A running node catches the table up when the replica
// is quiet (``ReplicaStore/catchUpSearch(fields:)``); a search reads the few items changed
// since from their fields (``SearchOverlay``), or, when there are many and the file is
// writable, catches up first. Collection and purge, which remove fields without a feed number,
// rewrite the texts of the items they touch before they commit.

extension Transaction {
    /// Notes that `item`'s text changed without a feed number (collection, purge): its text is
    /// rewritten before this transaction commits.
    mutating func noteSearchChange(item: Int64) {
        searchChanges.insert(item)
    }

    /// Rewrites the texts of the items noted with ``noteSearchChange(item:)``.
    mutating func refreshSearchTexts() throws {
        for item in searchChanges {
            try Self.refreshSearchText(item: item, db: db, nodes: nodes)
        }
        searchChanges = []
    }

    /// `item`'s text as its fields are now; nil if there is no such item. `beforeV20`: the file's
    /// field rows are not numbered by item yet (the v18 migration's).
    static func searchText(item: Int64, db: Database, nodes: NodeRows, beforeV20: Bool = false) throws -> String? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT item_id, type FROM item WHERE id = ?"),
                arguments: [item]
            )
        else { return nil }
        var fields: [(name: FieldName, value: Value?)] = []
        let cursor =
            beforeV20
            ? try Row.fetchCursor(db, sql: "SELECT name, state FROM field WHERE item = ?", arguments: [item])
            : try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT name, state FROM field WHERE id BETWEEN ? AND ?"),
                arguments: FieldRows.arguments(item: item)
            )
        while let field = try cursor.next() {
            let name = FieldName(unchecked: try field.decode(atIndex: 0))
            guard !name.isReserved else { continue }
            let bytes = try field.withUnsafeData(atIndex: 1) { data in data.map(Array.init) ?? [] }
            fields.append((name, try StoredState.decode(bytes, db: db, nodes: nodes).shownValue))
        }
        return ItemSearch.text(
            id: ItemID(unchecked: try row.decode(atIndex: 0)),
            type: try row.decode(atIndex: 1),
            fields: fields
        )
    }

    /// Writes `item`'s text if it changed (removes it if the item is gone).
    static func refreshSearchText(item: Int64, db: Database, nodes: NodeRows, beforeV20: Bool = false) throws {
        guard let text = try searchText(item: item, db: db, nodes: nodes, beforeV20: beforeV20) else {
            try db.cachedStatement(sql: "DELETE FROM item_search WHERE rowid = ?").execute(arguments: [item])
            return
        }
        let old = try String.fetchOne(
            db.cachedStatement(sql: "SELECT text FROM item_search WHERE rowid = ?"),
            arguments: [item]
        )
        guard old != text else { return }
        try db.cachedStatement(sql: "REPLACE INTO item_search(rowid, text) VALUES (?, ?)")
            .execute(arguments: [item, text])
    }
}

/// The items a search must not take from `item_search` because their fields changed after its
/// texts were written, and which of them the search matches as they are now.
struct SearchOverlay {
    var stale: Set<Int64> = []
    var matching: Set<Int64> = []
}

extension ReplicaStore {
    /// Past this many matches a search is common: a query walks its order and checks each
    /// item's text, which soon finds a page, instead of gathering every match first.
    static let searchCandidateLimit = 2000

    /// Up to this many items changed since the texts were written, a search reads them from their
    /// fields; past it, a writable replica catches its texts up first.
    static let searchOverlayLimit = 2000

    static func searchBacklog(db: Database) throws -> SearchBacklog {
        SearchBacklog(
            indexed: try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'search_seq'")
                .flatMap { Int64($0) } ?? 0,
            latest: try Transaction.latestSeq(db: db)
        )
    }

    /// How far the search texts are behind the replica.
    public func searchBacklog() throws(StoreError) -> SearchBacklog {
        try read { db in try Self.searchBacklog(db: db) }
    }

    /// Writes the texts of the items changed since `item_search` was last caught up, the items
    /// of at most `fields` changed fields in feed order, in one transaction whose commit a power
    /// cut may lose (the texts are read again from the fields); returns the backlog after it.
    @discardableResult
    public func catchUpSearch(fields: Int = 4096) throws(StoreError) -> SearchBacklog {
        try guarded {
            try write(.resent) { tx, _ in
                let before = try Self.searchBacklog(db: tx.db)
                guard !before.isEmpty else { return .rollback(before) }
                let rows = try Row.fetchAll(
                    tx.db,
                    sql: "SELECT item, seq FROM field WHERE seq > ? ORDER BY seq LIMIT ?",
                    arguments: [before.indexed, fields]
                )
                var items = Set<Int64>()
                for row in rows { items.insert(row[0]) }
                for item in items {
                    try Transaction.refreshSearchText(item: item, db: tx.db, nodes: tx.nodes)
                }
                // Fields are numbered one by one, so a full batch ends exactly at its last number;
                // a short one has reached the latest (or a floor above every field's number).
                let reached: Int64 = rows.count == fields ? rows[rows.count - 1][1] as Int64 : before.latest
                try tx.setMeta("search_seq", String(reached))
                return .commit(SearchBacklog(indexed: reached, latest: before.latest))
            }
        }
    }

    /// Makes a search's overlay small: a writable replica with more than `overlayLimit` items
    /// changed since its texts were written catches them up before the search reads.
    func prepareSearch(overlayLimit: Int = searchOverlayLimit) throws(StoreError) {
        guard !readOnly else { return }
        let many = try read { db in
            try Self.staleSearchRows(limit: overlayLimit, db: db) == nil
        }
        guard many else { return }
        while !(try catchUpSearch(fields: 20_000)).isEmpty {}
    }

    /// The items with a field changed after the texts were written; nil if more than `limit`.
    static func staleSearchRows(limit: Int, db: Database) throws -> [Int64]? {
        let indexed = try searchBacklog(db: db).indexed
        let rows = try Int64.fetchAll(
            db,
            sql: "SELECT DISTINCT item FROM field WHERE seq > ? LIMIT \(limit + 1)",
            arguments: [indexed]
        )
        return rows.count > limit ? nil : rows
    }

    /// The overlay `search` needs: every stale item's text read from its fields (however many
    /// there are: a read-only replica cannot catch up).
    static func searchOverlay(_ search: ItemSearch, db: Database, nodes: NodeRows) throws -> SearchOverlay {
        var overlay = SearchOverlay()
        for row in try staleSearchRows(limit: .max - 1, db: db) ?? [] {
            overlay.stale.insert(row)
            if let text = try Transaction.searchText(item: row, db: db, nodes: nodes), search.matches(text) {
                overlay.matching.insert(row)
            }
        }
        return overlay
    }

    /// The part of `word` the trigram index is asked for: its longest run without GLOB's
    /// wildcards (`*`, `?`, `[`). SQLite 3.40's trigram GLOB (Debian 12's) crashes on some
    /// patterns with a wildcard between two runs of several-byte letters (`*xæ[*]èìä¸*`: a
    /// schemathesis search brought a node down); a pattern of one run is safe (20,000 random runs
    /// of one- to four-byte letters tried), and `instr` checks the whole word on what it finds.
    /// A run of three letters or more is also answered right (3,000 random runs against a
    /// substring search); a shorter one is not, and is never given to the index.
    ///
    /// Split by Unicode scalar, not by character: `*` followed by a combining mark is one
    /// character but still GLOB's wildcard. NUL ends SQLite's pattern, so it splits too.
    static func indexKey(_ word: String) -> String {
        let runs = word.unicodeScalars.split { $0 == "*" || $0 == "?" || $0 == "[" || $0 == "\0" }
        return runs.max { $0.count < $1.count }.map { String(String.UnicodeScalarView($0)) } ?? ""
    }

    /// The items `search` matches, by row, if there are at most `limit`; nil if there are more.
    ///
    /// One word's ``indexKey(_:)`` goes to the trigram index as a GLOB (`lookupWord`); every
    /// word is checked with `instr` on the texts it finds: SQLite 3.40 crashes on two GLOBs over
    /// a trigram table when the first is shorter than a trigram, and one well-chosen lookup is
    /// all the index can do anyway.
    static func searchCandidates(
        _ search: ItemSearch,
        overlay: SearchOverlay,
        limit: Int,
        db: Database
    ) throws -> [Int64]? {
        let lookup = try lookupWord(search.words, limit: limit, db: db)
        let key = indexKey(lookup)
        // Under a trigram the index cannot help, and SQLite 3.40 answers such a GLOB wrongly
        // (`*\u{301}b*` finds nothing in `a*\u{301}b`): the texts are read, `instr` decides.
        let indexed = key.unicodeScalars.count >= 3
        let globDecides = indexed && key.unicodeScalars.elementsEqual(lookup.unicodeScalars)
        let checked = search.words.filter { !globDecides || $0 != lookup }
        let conditions = (indexed ? ["text GLOB ?"] : []) + checked.map { _ in "instr(text, ?) > 0" }
        let rows = try Int64.fetchAll(
            db,
            sql: "SELECT rowid FROM item_search WHERE \(conditions.joined(separator: " AND ")) LIMIT \(limit + 1)",
            arguments: StatementArguments((indexed ? ["*\(key)*"] : []) + checked)
        )
        guard rows.count <= limit else { return nil }
        guard !overlay.stale.isEmpty else { return rows }
        return Array(Set(rows).subtracting(overlay.stale).union(overlay.matching))
    }

    /// The word the trigram index narrows a search to the fewest texts with. Each word whose
    /// ``indexKey(_:)`` has three letters or more is looked up alone, stopping past `limit`
    /// texts, and the fewest wins: a common word given to the index with a rare one beside it
    /// would have the rare one checked on every text of the replica (100,000 items, `value 0004`:
    /// 231 ms against 2 ms), and each look costs a few milliseconds at most, since it stops at
    /// `limit`. A shorter key cannot use the index; the longest is the lookup when none can.
    static func lookupWord(_ words: [String], limit: Int, db: Database) throws -> String {
        let length = { (word: String) in indexKey(word).unicodeScalars.count }
        let longest = words.max { length($0) < length($1) }!
        let indexable = words.filter { length($0) >= 3 }
        guard indexable.count > 1 else { return longest }
        var best = (word: longest, texts: Int.max)
        for word in indexable {
            let texts =
                try Int.fetchOne(
                    db,
                    sql: "SELECT count(*) FROM (SELECT rowid FROM item_search WHERE text GLOB ? LIMIT \(limit + 1))",
                    arguments: ["*\(indexKey(word))*"]
                ) ?? 0
            if texts < best.texts { best = (word, texts) }
        }
        return best.word
    }

    /// A condition on `item i` that holds when `search` matches it, checked item by item (the
    /// text read by row id, a stale item's as the overlay found it): for walks over a common
    /// search.
    static func searchCondition(
        _ search: ItemSearch,
        overlay: SearchOverlay
    ) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
        let indexed = search.words.map { _ in
            "instr((SELECT s.text FROM item_search s WHERE s.rowid = i.id), ?) > 0"
        }.joined(separator: " AND ")
        guard !overlay.stale.isEmpty else { return (indexed, search.words) }
        // Row ids are integers the store read: written into the statement, not bound, so that
        // a large overlay is not limited by SQLite's count of parameters.
        let list = { (rows: Set<Int64>) in rows.map(String.init).joined(separator: ",") }
        return (
            "(i.id IN (\(list(overlay.matching))) OR (i.id NOT IN (\(list(overlay.stale))) AND \(indexed)))",
            search.words
        )
    }
}
