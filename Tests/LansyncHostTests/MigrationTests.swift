import Foundation
import LansyncCore
import LansyncHost
import LansyncJSON
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Testing

/// Replica files written by an earlier release open in this one and show the same: items (deleted
/// ones too), conflicts and history, as `list --json`, `conflicts --json` and `history --json`
/// printed them then. Fixtures/v5 holds two such files (schema v5) and what that release printed,
/// Fixtures/v19 two written by the last release before field rows were numbered by item (v20),
/// with removed fields, links and an indexed field too; each make.sh made them.
@Suite struct MigrationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures"
    ).path

    /// A copy of fixture `name` ("v5/a") opened, so migrated.
    func open(_ name: String) throws -> ReplicaStore {
        let dir = makeTemporaryDirectory("migrate-\(name.replacingOccurrences(of: "/", with: "-"))")
        try FileManager.default.copyItem(
            atPath: "\(Self.fixtures)/\(name)/replica.sqlite",
            toPath: dir + "/replica.sqlite"
        )
        return try ReplicaStore.open(path: dir + "/replica.sqlite", lease: WriterLease(directory: dir))
    }

    func expected(_ name: String, _ file: String) throws -> JSON {
        try JSON(parsing: String(contentsOfFile: "\(Self.fixtures)/\(name)/\(file)", encoding: .utf8))
    }

    @Test(arguments: ["v5/a", "v5/b"]) func anOldReplicaShowsTheSameItemsConflictsAndHistory(_ name: String) throws {
        let store = try open(name)
        var items: [String] = []
        try store.forEachItem(includeDeleted: true) { items.append($0.jsonText) }
        #expect(try JSON(parsing: "[" + items.joined(separator: ",") + "]") == expected(name, "list.json"))
        // The fixtures predate each value's writer and time ("versions") and removals ("removed",
        // false for all of them): the rest is unchanged.
        let conflicts = try JSON(parsing: store.conflicts().jsonText())
        guard case .array(let now) = conflicts, case .array(let then) = try expected(name, "conflicts.json") else {
            Issue.record("conflicts are not arrays")
            return
        }
        #expect(now.allSatisfy { $0["removed"] == .bool(false) })
        #expect(now.map { $0.removing("versions").removing("removed") } == then)
        for conflict in now {
            guard case .array(let versions)? = conflict["versions"], case .array(let values)? = conflict["values"]
            else {
                Issue.record("\(conflict)")
                continue
            }
            #expect(Set(versions.compactMap { $0["value"] }.map(\.text)) == Set(values.map(\.text)))
        }
        for id in ["task-1", "note-1", "gone", "from-b"] {
            // Every write of a replica from before signed writes is unverified (Docs/SECURITY.md,
            // "Signed writes"); the rest of its history is as it was.
            let history = try JSON(parsing: store.history(ItemID(id)).jsonText)
            #expect(history.allUnsigned, "\(id)")
            #expect(history.removingEverywhere("signed") == (try expected(name, "history.\(id).json")), "\(id)")
        }
        #expect(try store.fullCheck().isSound)
    }

    @Test func aMigratedReplicaKeepsWorking() throws {
        let store = try open("v5/b")
        let dot = try store.apply(
            .update([.set(.named("title"), .string("settled"))]),
            to: .named("task-1"),
            wallMilliseconds: 1_900_000_000_000
        )
        #expect(try store.conflicts().isEmpty)
        let history = try store.history(.named("task-1"), field: .named("title"))
        #expect(history.first?.dot == dot)
        #expect(history.first?.isLive == true)
        // Both conflicting values are kept as superseded versions, beside the older one.
        #expect(
            Set(history.dropFirst().map(\.write)) == [
                .assign(.string("Alpha title")), .assign(.string("Beta title")), .assign(.string("Climb again")),
            ]
        )
        #expect(history.dropFirst().allSatisfy { !$0.isLive })
    }

    /// v18 made every item's search text from what the file held: each item is found by its id
    /// and by a word of each of its values, as a replica written today finds them.
    @Test(arguments: ["v5/a", "v5/b", "v19/a", "v19/b"]) func anOldReplicaIsSearchable(_ name: String) throws {
        let store = try open(name)
        let items = try store.items(includeDeleted: true, limit: 1000)
        #expect(!items.isEmpty)
        for item in items {
            var words = [item.id.rawValue]
            for field in item.fields {
                if case .string(let s) = field.value, let w = s.split(separator: " ").first { words.append(String(w)) }
            }
            for word in words {
                let found = try store.query(ItemQuery(), includeDeleted: true, search: ItemSearch(word)!, limit: 1000)
                #expect(found.items.contains { $0.id == item.id }, "\(item.id) by \(word)")
            }
        }
    }

    /// A v19 file (the `field` table numbered in insertion order, with its `(item, name)` index)
    /// shows exactly what that release printed once its rows are numbered by item: history, links
    /// and the query index still find them (FieldRowsTests checks the rows themselves).
    @Test(arguments: ["v19/a", "v19/b"]) func aV19ReplicaShowsTheSameOnceRenumbered(_ name: String) throws {
        let store = try open(name)
        var items: [JSON] = []
        try store.forEachItem(includeDeleted: true) { items.append(try JSON(parsing: $0.jsonText)) }
        guard case .array(let then) = try expected(name, "list.json") else {
            Issue.record("list.json is not an array")
            return
        }
        // `sync` is the CLI's, from the peers' acknowledgements, not the store's.
        #expect(items == then.map { $0.removing("sync") })
        // Writers' names are the CLI's too (the store names nodes by id).
        #expect(
            try JSON(parsing: store.conflicts().jsonText()).removingEverywhere("writer")
                == expected(name, "conflicts.json").removingEverywhere("writer")
        )
        for id in ["task-1", "note-1", "gone", "from-b"] {
            let history = try JSON(parsing: store.history(ItemID(id)).jsonText)
            #expect(history.allUnsigned, "\(id)")
            #expect(
                history.removingEverywhere("writer").removingEverywhere("signed")
                    == (try expected(name, "history.\(id).json").removingEverywhere("writer")),
                "\(id)"
            )
        }
        #expect(try store.itemsLinking(to: ItemID("task-1")).map(\.item) == [ItemID("note-1")])
        let three = try store.query(
            ItemQuery(filters: [.init(field: .named("n"), op: .equal, value: .integer(3))]),
            limit: 10
        )
        #expect(three.items.map(\.id) == [ItemID.named("task-1")])
        #expect(try store.fullCheck().isSound)
        // It keeps working: a field added to an item takes the place after the item's last.
        _ = try store.apply(
            .update([.set(.named("extra"), .integer(1))]),
            to: ItemID("note-1"),
            wallMilliseconds: 1_900_000_000_000
        )
        #expect(try store.itemState(ItemID("note-1"))?.fields[.named("extra")]?.shownValue == .integer(1))
        #expect(try store.fullCheck().isSound)
    }
}

extension JSON {
    /// This object without `key` (any other JSON as it is).
    func removing(_ key: String) -> JSON {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { $0.0 != key })
    }

    /// True for a history (an array of entries) every entry of which says it is not signed.
    var allUnsigned: Bool {
        guard case .array(let entries) = self else { return false }
        return entries.allSatisfy { $0["signed"] == .bool(false) }
    }

    /// This JSON without `key` in any object it holds, however deep.
    func removingEverywhere(_ key: String) -> JSON {
        switch self {
        case .object(let members): .object(members.filter { $0.0 != key }.map { ($0.0, $0.1.removingEverywhere(key)) })
        case .array(let elements): .array(elements.map { $0.removingEverywhere(key) })
        default: self
        }
    }
}
