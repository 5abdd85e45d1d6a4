import Foundation
import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// Queries on a real replica file: the same answers with and without an index, an index kept in
/// step with edits and merges, pages that never overlap, and a plan that uses the index.
@Suite struct ItemQueryStoreTests {
    let dir = makeTemporaryDirectory("query")
    let t0: UInt64 = 1_700_000_000_000
    let owner = FieldName.named("owner")
    let priority = FieldName.named("priority")
    let tags = FieldName.named("tags")

    func filled() throws -> ReplicaStore {
        let store = try ReplicaStore.create(
            path: "\(dir)/r.sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "n1",
            fingerprint: "fp",
            lease: WriterLease(directory: dir)
        )
        for i in 0..<60 {
            var fields: [Assignment] = [
                .set(owner, .string(["ana", "bo", "cy"][i % 3])),
                .set(tags, .list(i % 4 == 0 ? [.string("urgent")] : [])),
            ]
            if i % 5 != 0 {
                fields.append(.set(priority, i % 2 == 0 ? .integer(Int64(i % 7)) : .double(Double(i % 7))))
            }
            try store.apply(
                .create(type: i < 50 ? "task" : "note", assignments: fields),
                to: .named(String(format: "i%02d", i)),
                wallMilliseconds: t0
            )
        }
        try store.apply(.delete, to: .named("i03"), wallMilliseconds: t0)
        return store
    }

    func ids(_ page: QueryPage) -> [String] { page.items.map(\.id.rawValue) }

    @Test func anIndexChangesHowNotWhat() throws {
        let store = try filled()
        let queries: [ItemQuery] = [
            ItemQuery(filters: [.init(field: owner, op: .equal, value: .string("ana"))]),
            ItemQuery(filters: [.init(field: priority, op: .greaterOrEqual, value: .integer(4))]),
            ItemQuery(filters: [.init(field: tags, op: .contains, value: .string("urgent"))]),
            ItemQuery(filters: [.init(field: owner, op: .prefix, value: .string("b"))]),
            ItemQuery(filters: [.init(field: priority, op: .missing, value: nil)]),
            ItemQuery(
                filters: [
                    .init(field: owner, op: .notEqual, value: .string("cy")),
                    .init(field: priority, op: .less, value: .double(2.5)),
                ],
                sort: .init(field: priority, descending: true)
            ),
            ItemQuery(
                filters: [
                    .init(field: priority, op: .missing, value: nil),
                    .init(field: owner, op: .equal, value: .string("ana")),
                ]
            ),
        ]
        // Every item checked by hand: what a query must find, however it narrows its reading.
        let tasks = try store.items(type: "task", includeDeleted: false, after: nil, limit: 1000)
        func reference(_ query: ItemQuery) -> Set<String> {
            Set(
                tasks.filter { item in
                    var values: [FieldName: Value] = [:]
                    for field in item.fields { values[field.name] = field.value }
                    return query.matches(values)
                }.map(\.id.rawValue)
            )
        }
        let before = try queries.map { try ids(store.query($0, type: "task", limit: 1000)) }
        for (query, found) in zip(queries, before) {
            #expect(Set(found) == reference(query), "\(query)")
        }
        #expect(before.last == ["i00", "i15", "i30", "i45"], "no priority (every 5th), owner ana (every 3rd)")
        #expect(before[0].count == 16 && !before[0].contains("i03"), "every 3rd task, one deleted: \(before[0])")
        #expect(before[2].count == 13, "every 4th task, one deleted: \(before[2])")
        for field in [owner, priority, tags] { try store.addIndex(field) }
        let after = try queries.map { try ids(store.query($0, type: "task", limit: 1000)) }
        #expect(before == after)
        let plan = try store.queryPlan(queries[1])
        #expect(plan.contains("query_by_num"), "\(plan)")
        #expect(try store.queryPlan(queries[0]).contains("query_by_txt"))
        #expect(try store.queryPlan(queries[4]).hasPrefix("no filter on an indexed field"), "missing cannot use it")
        #expect(try store.indexedFields().map(\.field) == [owner, priority, tags])

        // The index follows edits.
        try store.apply(
            .update([.set(owner, .string("ana")), .add(tags, .string("urgent"))]),
            to: .named("i01"),
            wallMilliseconds: t0
        )
        let ana = try ids(store.query(queries[0], type: "task", limit: 1000))
        #expect(ana.contains("i01") && ana.count == 17)
        #expect(try ids(store.query(queries[2], type: "task", limit: 1000)).contains("i01"))
        try store.dropIndex(owner)
        #expect(
            try ids(store.query(queries[0], type: "task", limit: 1000)) == ana,
            "dropping it changes nothing either"
        )
    }

    /// The byte search that lets an unindexed filter skip a state agrees with a search by hand,
    /// on random bytes from a small alphabet (so that first bytes often match and the rest not),
    /// needles at the very start and end, longer than the bytes, and empty.
    @Test func theByteSearchFindsWhatASearchByHandFinds() {
        var rng = SplitMix64(seed: 0x5EA_4C4)
        func naive(_ h: [UInt8], _ n: [UInt8]) -> Bool {
            n.isEmpty || (n.count <= h.count && (0...(h.count - n.count)).contains { Array(h[$0..<$0 + n.count]) == n })
        }
        var found = 0
        for _ in 0..<5000 {
            let h = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 97...99, using: &rng) }
            let n: [UInt8]
            switch Int.random(in: 0...3, using: &rng) {
            case 0 where !h.isEmpty: n = Array(h.prefix(Int.random(in: 1...h.count, using: &rng)))
            case 1 where !h.isEmpty: n = Array(h.suffix(Int.random(in: 1...h.count, using: &rng)))
            default: n = (0..<Int.random(in: 0...6, using: &rng)).map { _ in UInt8.random(in: 97...99, using: &rng) }
            }
            let fast = h.withUnsafeBytes { ReplicaStore.bytes($0, contain: n) }
            #expect(fast == naive(h, n), "\(h) contains \(n)")
            if fast { found += 1 }
        }
        #expect(found > 1000 && found < 4900, "both answers drawn often: \(found) of 5000 found")
    }

    @Test func pagesFollowTheOrderWithoutOverlap() throws {
        let store = try filled()
        let query = ItemQuery(
            filters: [.init(field: owner, op: .exists, value: nil)],
            sort: .init(field: priority, descending: false)
        )
        let whole = try ids(store.query(query, limit: 1000))
        var paged: [String] = []
        var after: String?
        repeat {
            let page = try store.query(query, limit: 7, after: after)
            paged += ids(page)
            after = page.next
        } while after != nil
        #expect(paged == whole && whole.count == 59)
        #expect(throws: QueryError.self) { try store.query(query, limit: 7, after: "not a cursor") }
    }
}
