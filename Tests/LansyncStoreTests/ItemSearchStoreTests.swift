import Foundation
import GRDB
import LansyncCore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// Searches and ordered walks on a real replica file: what the search index finds is what
/// ``ItemSearch`` says an item's text holds, after edits, retypes, unsets and deletes; and a page
/// read in order from an index is the page that sorting every item gives, through every cursor.
@Suite(.computeBound) struct ItemSearchStoreTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("search")
    let title = FieldName.named("title")
    let rank = FieldName.named("rank")
    let tags = FieldName.named("tags")

    func store() throws -> ReplicaStore { try replica(1) }

    static let words = [
        "Apple", "apricot", "ÜBER", "über", "a*b", "x?y", "[z]", "co", "ab", "tea", "TEAM", "42", "7.5",
    ]

    /// What a search must find: every item's text made by hand from its shown values.
    func reference(_ store: ReplicaStore, _ search: ItemSearch, includeDeleted: Bool) throws -> [String] {
        try store.items(includeDeleted: includeDeleted, limit: 100_000).filter { item in
            search.matches(
                ItemSearch.text(id: item.id, type: item.type, fields: item.fields.map { ($0.name, $0.value) })
            )
        }.map(\.id.rawValue)
    }

    func found(
        _ store: ReplicaStore,
        _ search: ItemSearch,
        includeDeleted: Bool,
        commonSearch: Int,
        overlayLimit: Int = ReplicaStore.searchOverlayLimit,
        limit: Int = 1000
    ) throws -> [String] {
        var ids: [String] = []
        var after: String?
        repeat {
            let page = try store.query(
                ItemQuery(),
                type: nil,
                includeDeleted: includeDeleted,
                search: search,
                limit: limit,
                after: after,
                withLocalEdits: false,
                commonSearch: commonSearch,
                overlayLimit: overlayLimit
            )
            ids += page.items.map(\.id.rawValue)
            after = page.next
        } while after != nil
        return ids
    }

    @Test func aSearchFindsWhatTheItemsTextHolds() throws {
        let store = try store()
        var rng = SplitMix64(seed: 0x5EA_2C4)
        func word() -> String { Self.words[Int.random(in: 0..<Self.words.count, using: &rng)] }
        for i in 0..<80 {
            var assignments: [Assignment] = [.set(title, .string("\(word()) \(word())"))]
            switch i % 4 {
            case 0: assignments.append(.set(rank, .integer(Int64(i))))
            case 1: assignments.append(.set(rank, .double(7.5)))
            case 2: assignments.append(.set(tags, .list([.string(word()), .bool(i % 3 == 0), .ref(.named("i00"))])))
            default: assignments.append(.set(FieldName.named(word() == "tea" ? "teapot" : "note"), .null))
            }
            try store.apply(
                .create(type: i % 3 == 0 ? "Recipe" : "task", assignments: assignments),
                to: .named(String(format: "i%02d", i)),
                wallMilliseconds: t0
            )
        }
        let searches =
            (Self.words + [
                "i0", "i05", "recipe", "teatime", "true", "@i00", "nothing here", "title", "tags", "zzz", "co apple",
                "42 tea", "i0 ab",
            ])
            .compactMap(ItemSearch.init)
        var nonEmpty = 0
        func checkEverySearch(_ state: String) throws {
            for search in searches {
                for includeDeleted in [false, true] {
                    let expected = try reference(store, search, includeDeleted: includeDeleted)
                    if !expected.isEmpty { nonEmpty += 1 }
                    // Gathered from the index, and walked item by item as a common search is.
                    for common in [1000, 0] {
                        #expect(
                            try found(store, search, includeDeleted: includeDeleted, commonSearch: common, limit: 7)
                                == expected,
                            "\(state): \(search.words) deleted: \(includeDeleted), common past \(common)"
                        )
                    }
                }
            }
        }
        // The edits wrote no text: every item is read from its fields.
        #expect(try store.searchBacklog().indexed == 0)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item_search") } == 0)
        try checkEverySearch("no text written")
        let caughtUp = try store.catchUpSearch(fields: 50)
        #expect(!caughtUp.isEmpty && caughtUp.indexed > 0, "a batch of 50 fields leaves some behind")
        try checkEverySearch("some texts written")
        while !(try store.catchUpSearch(fields: 50)).isEmpty {}
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item_search") } == 80)
        try checkEverySearch("every text written")

        // Texts change: a word replaced, a field unset, a retype, a delete.
        try store.apply(.update([.set(title, .string("nothing here"))]), to: .named("i05"), wallMilliseconds: t0)
        try store.apply(.update([.unset(tags)]), to: .named("i06"), wallMilliseconds: t0)
        try store.apply(.retype("teatime"), to: .named("i07"), wallMilliseconds: t0)
        try store.apply(.delete, to: .named("i08"), wallMilliseconds: t0)
        #expect(!(try store.searchBacklog()).isEmpty)
        try checkEverySearch("four texts stale")
        // Past the overlay's limit, a search catches the texts up first.
        #expect(
            try found(store, ItemSearch("teatime")!, includeDeleted: false, commonSearch: 1000, overlayLimit: 3) == [
                "i07"
            ]
        )
        #expect(try store.searchBacklog().isEmpty)
        try checkEverySearch("caught up again")
        #expect(nonEmpty > 100, "most searches find something: \(nonEmpty)")
        #expect(try found(store, ItemSearch("über")!, includeDeleted: false, commonSearch: 1000).count > 5)
        #expect(try found(store, ItemSearch("i05 nothing")!, includeDeleted: false, commonSearch: 1000) == ["i05"])
        #expect(try found(store, ItemSearch("i06 tags")!, includeDeleted: false, commonSearch: 1000).isEmpty, "unset")
        #expect(try found(store, ItemSearch("teatime")!, includeDeleted: false, commonSearch: 1000) == ["i07"])
        #expect(try found(store, ItemSearch("i08")!, includeDeleted: false, commonSearch: 1000).isEmpty)
        #expect(try found(store, ItemSearch("i08")!, includeDeleted: true, commonSearch: 1000) == ["i08"])
    }

    /// A common word beside a rare one: the index is asked for the rare one, so the other is
    /// checked on a few texts, not on every item's (the longest word was asked before).
    @Test func theIndexIsAskedForTheRarestWord() throws {
        let store = try store()
        for i in 0..<30 {
            try store.apply(
                .create(type: "task", assignments: [.set(title, .string(i == 7 ? "common rare" : "common word"))]),
                to: .named(String(format: "i%02d", i)),
                wallMilliseconds: t0
            )
        }
        while !(try store.catchUpSearch()).isEmpty {}
        let lookup = { (words: [String]) in
            try store.read { db in try ReplicaStore.lookupWord(words, limit: 5, db: db) }
        }
        #expect(try lookup(["common", "rare"]) == "rare")
        #expect(try lookup(["rare", "common"]) == "rare")
        #expect(try lookup(["common", "ab"]) == "common", "a word of two letters cannot use the index")
        #expect(try lookup(["ab", "x"]) == "ab", "no word can: the longest, as before")
        #expect(try found(store, ItemSearch("common rare")!, includeDeleted: false, commonSearch: 10) == ["i07"])
        #expect(try found(store, ItemSearch("word common")!, includeDeleted: false, commonSearch: 100).count == 29)
    }

    /// GLOB's wildcards between letters of several bytes: SQLite 3.40's trigram index crashed
    /// the process on `*xæ[*]èìä¸*` (schemathesis's `q` did so to a node), so the index is
    /// asked for a word's longest plain run and `instr` checks the rest.
    @Test func wildcardsBetweenSeveralByteLettersAreSearchedSafely() throws {
        let store = try store()
        let titles = [
            "xæ*èìä¸ one", "xæ?èìä¸ two", "xæ[èìä¸ three", "xæèìä¸ four", "\u{4}æ*èìä¸s>", "plain",
            "a*\u{301}b xæ*\u{301}èìä¸", "pl[ain",
        ]
        for (i, title) in titles.enumerated() {
            try store.apply(
                .create(type: "task", assignments: [.set(self.title, .string(title))]),
                to: .named("w\(i)"),
                wallMilliseconds: t0
            )
        }
        while !(try store.catchUpSearch()).isEmpty {}
        #expect(ReplicaStore.indexKey("xæ*èìä¸") == "èìä¸")
        #expect(ReplicaStore.indexKey("a*b?cd[ef") == "cd")
        #expect(ReplicaStore.indexKey("*?[") == "")
        #expect(ReplicaStore.indexKey("xæ*\u{301}èìä¸") == "\u{301}èìä¸", "a wildcard before a combining mark")
        let searches = [
            "xæ*èìä¸", "xæ?èìä¸", "xæ[èìä¸", "xæ[*]èìä¸", "\u{4}æ*èìä¸s>èìä¸", "\u{4}Æ*\u{F394C}ßS>ÈÌÄ¸",
            "xæ*èìä¸ one", "èìä¸ xæ?", "*", "[?] plain", "xæ*èìä¸ xæ?èìä¸", "xæ*\u{301}èìä¸", "a*\u{301}b",
            "pl[ain", "x\u{0}æ*èìä¸",
        ].compactMap(ItemSearch.init)
        var nonEmpty = 0
        for search in searches {
            let expected = try reference(store, search, includeDeleted: false)
            if !expected.isEmpty { nonEmpty += 1 }
            for common in [1000, 0] {
                #expect(
                    try found(store, search, includeDeleted: false, commonSearch: common) == expected,
                    "\(search.words), common past \(common): \((try? found(store, search, includeDeleted: false, commonSearch: common)) ?? []) against \(expected)"
                )
            }
        }
        #expect(nonEmpty >= 5, "most of these find an item: \(nonEmpty)")
    }

    @Test func aPageWalkedInOrderIsThePageSortingEveryItemGives() throws {
        let store = try store()
        var rng = SplitMix64(seed: 0x0DE_12)
        let values: [Value?] = [
            nil, .null, .bool(true), .bool(false), .integer(3), .double(3), .double(-1.5), .integer(10),
            .string("b"), .string("B"), .string("ä"), .string(""), .ref(.named("i01")), .ref(.named("i00")),
        ]
        for i in 0..<70 {
            var assignments: [Assignment] = [.set(title, .string(i % 2 == 0 ? "even tea" : "odd"))]
            if let value = values[Int.random(in: 0..<values.count, using: &rng)] {
                assignments.append(.set(rank, value))
            }
            try store.apply(
                .create(type: i % 5 == 0 ? "note" : "task", assignments: assignments),
                to: .named(String(format: "i%02d", i)),
                wallMilliseconds: t0
            )
        }
        try store.apply(.delete, to: .named("i04"), wallMilliseconds: t0)
        try store.addIndex(rank)

        func pages(_ query: ItemQuery, type: String?, deleted: Bool, search: ItemSearch?, limit: Int) throws -> [String]
        {
            var ids: [String] = []
            var after: String?
            repeat {
                let page = try store.query(
                    query,
                    type: type,
                    includeDeleted: deleted,
                    search: search,
                    limit: limit,
                    after: after,
                    withLocalEdits: false,
                    commonSearch: 0
                )
                ids += page.items.map(\.id.rawValue)
                after = page.next
            } while after != nil
            return ids
        }
        func reference(_ query: ItemQuery, type: String?, deleted: Bool, search: ItemSearch?) throws -> [String] {
            try store.items(type: type, includeDeleted: deleted, limit: 1000).filter { item in
                search?.matches(
                    ItemSearch.text(id: item.id, type: item.type, fields: item.fields.map { ($0.name, $0.value) })
                ) ?? true
            }.map { item in
                (value: item.fields.first { $0.name == rank }?.value, id: item.id.rawValue)
            }.sorted { query.precedes($0, $1) }.map(\.id)
        }
        var compared = 0
        for sort in [nil, ItemQuery.Sort(field: rank, descending: false), .init(field: rank, descending: true)] {
            let query = ItemQuery(sort: sort)
            for (type, deleted, search) in [
                (nil, false, nil), ("task", true, nil), (nil, true, ItemSearch("tea")),
                ("note", false, ItemSearch("odd")),
            ] as [(String?, Bool, ItemSearch?)] {
                for limit in [1, 6, 100] {
                    let expected = try reference(query, type: type, deleted: deleted, search: search)
                    #expect(
                        try pages(query, type: type, deleted: deleted, search: search, limit: limit) == expected,
                        "sort \(String(describing: sort)) type \(type ?? "any") deleted \(deleted) search \(search?.words ?? []) limit \(limit)"
                    )
                    compared += expected.count
                }
            }
        }
        #expect(compared > 500)

        func walkable() throws -> Bool { try store.read { db in try ReplicaStore.walkable(rank, db: db) } }
        // Walkable: the index gives this order. Not once a list or a number past 2^53 is a value.
        #expect(try walkable())
        try store.apply(.update([.set(rank, .list([.integer(1)]))]), to: .named("i10"), wallMilliseconds: t0)
        #expect(try !walkable())
        let listed = ItemQuery(sort: .init(field: rank, descending: false))
        #expect(
            try pages(listed, type: nil, deleted: false, search: nil, limit: 4)
                == reference(listed, type: nil, deleted: false, search: nil)
        )
        try store.apply(.update([.set(rank, .integer(1 << 60))]), to: .named("i10"), wallMilliseconds: t0)
        #expect(try !walkable())
        try store.apply(.update([.set(rank, .integer(1))]), to: .named("i10"), wallMilliseconds: t0)
        #expect(try walkable())
    }
}
