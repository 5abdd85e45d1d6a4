import Foundation
import GRDB
import LansyncCore
import LansyncTestSupport
import Testing

// @testable: the row numbering (FieldRows) and the store's reads are checked from inside.
@testable import LansyncReplica
@testable import LansyncStore

/// Field rows numbered by item (v20, ``FieldRows``): where new fields go, that the reads of an
/// item's fields search a range of the key instead of scanning, and that a file of the release
/// before is renumbered in place.
@Suite struct FieldRowsTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("field-rows")
    let t0: UInt64 = 1_700_000_000_000
    var lease: WriterLease { WriterLease(directory: dir) }

    func create() throws -> ReplicaStore {
        try ReplicaStore.create(
            path: dir + "/replica.sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "n1",
            fingerprint: "fp",
            lease: lease
        )
    }

    @Test func anItemsFieldsTakeTheNextPlacesOfItsRange() throws {
        let store = try create()
        try store.apply(
            .create(type: "t", assignments: [.set(.named("a"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        try store.apply(
            .create(type: "t", assignments: [.set(.named("a"), .integer(2))]),
            to: .named("y"),
            wallMilliseconds: t0
        )
        try store.apply(.update([.set(.named("b"), .integer(3))]), to: .named("x"), wallMilliseconds: t0 + 1)
        let placed = try store.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT i.item_id, f.name, f.id - (i.id << 12), f.item = i.id FROM field f JOIN item i ON i.id = f.id >> 12 ORDER BY f.id"
            ).map { "\($0[0] as String).\($0[1] as String)@\($0[2] as Int64)/\($0[3] as Bool)" }
        }
        // Each item's `_type` first, then its fields in the order they came.
        #expect(placed == ["x._type@0/true", "x.a@1/true", "x.b@2/true", "y._type@0/true", "y.a@1/true"])
    }

    @Test func aFullLastPlaceSendsTheNextFieldsToTheFreeOnes() throws {
        let store = try create()
        try store.apply(
            .create(
                type: "t",
                assignments: [
                    .set(.named("a"), .integer(1)), .set(.named("b"), .integer(2)), .set(.named("c"), .integer(3)),
                ]
            ),
            to: .named("x"),
            wallMilliseconds: t0
        )
        let item = try store.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM item WHERE item_id = 'x'")! }
        let place = { (name: String) in
            try store.read { db in
                try Int64.fetchOne(db, sql: "SELECT id - (? << 12) FROM field WHERE name = ?", arguments: [item, name])
            }
        }
        // Move `a` to the range's last place, as if the places between had been used and freed:
        // places 0 (`_type`), 2, 3 and 4095 are taken.
        let from = try #require(try place("a"))
        try store.database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
            for table in ["field SET id", "version SET field"] {
                try db.execute(
                    sql: "UPDATE \(table) = ? WHERE \(table.hasPrefix("field") ? "id" : "field") = ?",
                    arguments: [FieldRows.range(item: item).upperBound, (item << 12) + from]
                )
            }
        }
        #expect(try place("a") == FieldRows.perItem - 1)
        // Two new fields in one edit: the first free place, then the next free one (not the
        // place after it, which is taken).
        try store.apply(
            .update([.set(.named("d"), .integer(4)), .set(.named("e"), .integer(5))]),
            to: .named("x"),
            wallMilliseconds: t0 + 1
        )
        #expect(try Set([place("d"), place("e")]) == [1, 4])
        #expect(try store.itemState(.named("x"))?.fields.count == 6)
        #expect(try store.fullCheck().isSound)
    }

    /// Past the range's last place a new field (here one a peer wrote) is refused with a
    /// sentence that names the item and says what to do, and the batch changes nothing. (A local
    /// edit meets the 256-field limit first: every row counts, a removed field's too.)
    @Test func aFullRangeRefusesANewFieldAndChangesNothing() throws {
        let store = try create()
        let peer = try replica(2)
        try store.apply(
            .create(type: "t", assignments: [.set(.named("a"), .integer(1)), .set(.named("z"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        try store.apply(.update([.unset(.named("z"))]), to: .named("x"), wallMilliseconds: t0)
        try sync(store, peer)
        try peer.apply(.update([.set(.named("b"), .integer(2))]), to: .named("x"), wallMilliseconds: t0 + 1)
        let item = try store.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM item WHERE item_id = 'x'")! }
        // Every other place taken by a field the item no longer shows, as removed fields and
        // the rows of refused ones take them.
        try store.database.write { db in
            let z = try #require(try Int64.fetchOne(db, sql: "SELECT id FROM field WHERE name = 'z'"))
            for place in FieldRows.range(item: item)
            where try Int64.fetchOne(
                db,
                sql: "SELECT 1 FROM field WHERE id = ?",
                arguments: [place]
            ) == nil {
                try db.execute(
                    sql: "INSERT INTO field(id, name, state) SELECT ?, ?, state FROM field WHERE id = ?",
                    arguments: [place, "p\(place)", z]
                )
            }
        }
        let count = { try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM field") } }
        let before = (try count(), try store.latestChangeSeq(), try store.versionVector())
        #expect(before.0 == Int(FieldRows.perItem))
        #expect {
            try sync(peer, store)
        } throws: { error in
            "\(error)".contains("item x has 4096 field rows")
                && "\(error)".contains("copy the fields it still needs to a new item")
        }
        #expect(try count() == before.0)
        #expect(try store.latestChangeSeq() == before.1)
        #expect(try store.versionVector() == before.2)
        #expect(try store.storedItem(.named("x"))?.value(of: .named("b")) == nil)
    }

    /// A peer's batch that creates items takes each new item's first field without a look-up and
    /// reads no field of the item it has just created: fields of new items that come apart
    /// (x, y, then x again) or twice (a state and a later one of the same field) still land one
    /// row per field, holding the merged state, in the places of their item's range.
    @Test func aBatchOfNewItemsPlacesEachFieldOnceWhateverItsOrder() throws {
        let store = try create()
        let sender = NodeID.node(2)
        var counter: UInt64 = 0
        // `by`: another writer, whose first write this is (concurrent with all of the sender's).
        func state(_ value: String, after earlier: FieldState = FieldState(), by other: NodeID? = nil) -> FieldState {
            counter += 1
            var state = earlier
            state.assign(
                .string(value),
                dot: other.map { Dot(node: $0, counter: 1) } ?? Dot(node: sender, counter: counter),
                timestamp: HLCTimestamp(rawValue: counter)
            )
            return state
        }
        let xa = state("x.a 1")
        let updates = [
            FieldUpdate(key: FieldKey(item: .named("x"), field: .named("a")), state: xa),
            FieldUpdate(key: FieldKey(item: .named("x"), field: .named("b")), state: state("x.b")),
            FieldUpdate(key: FieldKey(item: .named("y"), field: .named("a")), state: state("y.a")),
            FieldUpdate(key: FieldKey(item: .named("x"), field: .named("c")), state: state("x.c")),
            FieldUpdate(key: FieldKey(item: .named("x"), field: .named("a")), state: state("x.a 2", after: xa)),
            FieldUpdate(key: FieldKey(item: .named("y"), field: .named("b")), state: state("y.b 1")),
            FieldUpdate(key: FieldKey(item: .named("y"), field: .named("b")), state: state("y.b 2", by: .node(3))),
        ]
        let received = try store.receive(
            DeltaBatch(updates: updates, covers: VersionVector([sender: counter - 1, .node(3): 1])),
            from: sender,
            incarnation: sender,
            wallMilliseconds: t0
        )
        #expect(received.changed == 7)
        let placed = try store.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT i.item_id, f.name, f.id - (i.id << 12) FROM field f JOIN item i ON i.id = f.id >> 12 ORDER BY f.id"
            ).map { "\($0[0] as String).\($0[1] as String)@\($0[2] as Int64)" }
        }
        #expect(placed == ["x.a@0", "x.b@1", "x.c@2", "y.a@0", "y.b@1"])
        let x = try #require(try store.itemState(.named("x")))
        let y = try #require(try store.itemState(.named("y")))
        // The later state of x.a superseded the first; y.b's two states (by two writers) were
        // concurrent, and both stay.
        #expect(x.fields[.named("a")]?.shownValue == .string("x.a 2"))
        #expect(x.fields[.named("a")]?.versions.count == 1)
        #expect(y.fields[.named("b")]?.versions.count == 2)
        #expect(try store.fullCheck().isSound)
    }

    /// The reads that start from an item (get, history, a list's page, a field by name) search a
    /// range of the field table's key, and those that start from a field find its item by key:
    /// none scans the table or builds an index for itself.
    @Test func readsFromAnItemSearchItsRange() throws {
        let store = try create()
        let plans = try store.read { db in
            let statements: [(String, StatementArguments)] = [
                ("SELECT id, name, state FROM field WHERE id BETWEEN ? AND ?", [1, 2]),
                ("SELECT f.name, f.state FROM field f JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ?", ["x"]),
                (
                    "SELECT f.state FROM field f JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ? AND f.name = ?",
                    ["x", "a"]
                ),
                ("SELECT i.item_id, f.name FROM item i LEFT JOIN field f ON \(FieldRows.of()) ORDER BY i.item_id", []),
                (
                    "SELECT v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item WHERE v.node = ?",
                    [1]
                ),
            ]
            return try statements.map { sql, arguments in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map {
                    $0["detail"] as String
                }
                .joined(separator: "; ")
            }
        }
        for plan in plans {
            #expect(!plan.contains("SCAN f") && !plan.contains("AUTOMATIC"), "\(plan)")
            #expect(plan.contains("USING INTEGER PRIMARY KEY (rowid"), "\(plan)")
        }
    }

    /// The release before v20 numbered field rows as they came and kept an `(item, name)` index:
    /// its file is renumbered in place, with every reference to a field row, and shrunk again.
    @Test(arguments: ["a", "b"]) func aV19FileIsRenumberedInPlace(_ name: String) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../LansyncHostTests/Fixtures/v19/\(name)/replica.sqlite").standardized.path
        let before = try DatabaseQueue(
            path: fixture,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }()
        )
        let (states, versions, history) = try before.read { db in
            (
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT i.item_id, f.name, f.state, f.seq FROM field f JOIN item i ON i.id = f.item ORDER BY 1, 2"
                )
                .map {
                    "\($0[0] as String) \($0[1] as String) \(($0[2] as Data).base64EncodedString()) \($0[3] as Int64)"
                },
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT v.node, v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item ORDER BY 1, 2, 3, 4"
                )
                .map { "\($0[0] as Int64) \($0[1] as Int64) \($0[2] as String) \($0[3] as String)" },
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT h.seq, i.item_id, f.name, h.node, h.counter, h.write FROM history h JOIN field f ON f.id = h.field JOIN item i ON i.id = f.item ORDER BY 1"
                )
                .map {
                    "\($0[0] as Int64) \($0[1] as String) \($0[2] as String) \($0[3] as Int64) \($0[4] as Int64) \($0[5] as String)"
                }
            )
        }
        try before.close()
        #expect(!states.isEmpty && !versions.isEmpty && !history.isEmpty)
        let path = dir + "/replica.sqlite"
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        let store = try ReplicaStore.open(path: path, lease: lease)
        try store.read { db in
            let join = "JOIN item i ON \(FieldRows.of())"
            #expect(
                try Row.fetchAll(db, sql: "SELECT i.item_id, f.name, f.state, f.seq FROM field f \(join) ORDER BY 1, 2")
                    .map {
                        "\($0[0] as String) \($0[1] as String) \(($0[2] as Data).base64EncodedString()) \($0[3] as Int64)"
                    } == states
            )
            #expect(
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT v.node, v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field \(join) ORDER BY 1, 2, 3, 4"
                )
                .map { "\($0[0] as Int64) \($0[1] as Int64) \($0[2] as String) \($0[3] as String)" } == versions
            )
            #expect(
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT h.seq, i.item_id, f.name, h.node, h.counter, h.write FROM history h JOIN field f ON f.id = h.field \(join) ORDER BY 1"
                )
                .map {
                    "\($0[0] as Int64) \($0[1] as String) \($0[2] as String) \($0[3] as Int64) \($0[4] as Int64) \($0[5] as String)"
                } == history
            )
            let indexes = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE tbl_name = 'field' AND type = 'index'"
            )
            #expect(Set(indexes) == ["field_conflicts", "field_by_superseded", "field_by_seq"])
            #expect(try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0 < 4)
            #expect(try String.fetchAll(db, sql: "PRAGMA foreign_key_check").isEmpty)
        }
        #expect(try store.fullCheck().isSound)
    }
}
