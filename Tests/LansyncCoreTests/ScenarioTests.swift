import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

/// The scenarios of the brief and of Docs/MERGE.md, as named examples.
@Suite struct ScenarioTests {
    let t0: UInt64 = 1_700_000_000_000
    let item = ItemID.named("item-1")

    /// Two replicas that share the item `item-1` (type task, `title` and `tags` set on A first).
    func pair(tags: [Value] = []) throws -> (Replica, Replica) {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        var assignments: [Assignment] = [.set(.named("title"), .string("Climb"))]
        if !tags.isEmpty { assignments.append(.set(.named("tags"), .list(tags))) }
        try a.apply(.create(type: "task", assignments: assignments), to: item, wallMilliseconds: t0)
        sync(&a, &b)
        return (a, b)
    }

    func sync(_ a: inout Replica, _ b: inout Replica) {
        for batch in a.delta(for: b.versionVector) { b.apply(batch, wallMilliseconds: t0) }
        for batch in b.delta(for: a.versionVector) { a.apply(batch, wallMilliseconds: t0) }
    }

    @Test func disjointFieldsAutoMerge() throws {
        var (a, b) = try pair()
        try a.apply(.update([.set(.named("location"), .string("Fontainebleau"))]), to: item, wallMilliseconds: t0 + 10)
        try b.apply(.update([.set(.named("title"), .string("Bouldering"))]), to: item, wallMilliseconds: t0 + 20)
        sync(&a, &b)
        let view = a.items[item]!.view
        #expect(view.fields[.named("location")] == .string("Fontainebleau"))
        #expect(view.fields[.named("title")] == .string("Bouldering"))
        #expect(view.conflicts.isEmpty)
        #expect(a.items == b.items)
    }

    @Test func listAdditionsUnion() throws {
        var (a, b) = try pair(tags: [.string("climbing")])
        try a.apply(.update([.add(.named("tags"), .string("reading"))]), to: item, wallMilliseconds: t0 + 10)
        try b.apply(.update([.add(.named("tags"), .string("karaoke"))]), to: item, wallMilliseconds: t0 + 20)
        sync(&a, &b)
        let expected: Value = .list([.string("climbing"), .string("reading"), .string("karaoke")])
        #expect(a.items[item]!.view.fields[.named("tags")] == expected)
        #expect(b.items[item]!.view.fields[.named("tags")] == expected)
        #expect(a.conflicts.isEmpty)
    }

    @Test func concurrentAddWinsOverRemove() throws {
        var (a, b) = try pair(tags: [.string("x"), .string("y")])
        try a.apply(.update([.remove(.named("tags"), .string("x"))]), to: item, wallMilliseconds: t0 + 10)
        try b.apply(.update([.add(.named("tags"), .string("x"))]), to: item, wallMilliseconds: t0 + 20)
        sync(&a, &b)
        #expect(a.items[item]!.view.fields[.named("tags")] == .list([.string("x"), .string("y")]))
        // A remove that has seen the add does remove it.
        try a.apply(.update([.remove(.named("tags"), .string("x"))]), to: item, wallMilliseconds: t0 + 30)
        sync(&a, &b)
        #expect(b.items[item]!.view.fields[.named("tags")] == .list([.string("y")]))
    }

    @Test func sameFieldConflictIsVisibleAndSettles() throws {
        var (a, b) = try pair()
        try a.apply(.update([.set(.named("title"), .string("from A"))]), to: item, wallMilliseconds: t0 + 10)
        try b.apply(.update([.set(.named("title"), .string("from B"))]), to: item, wallMilliseconds: t0 + 20)
        sync(&a, &b)
        let title = FieldName.named("title")
        // Both show the same value: the later timestamp.
        #expect(a.items[item]!.view.fields[title] == .string("from B"))
        #expect(b.items[item]!.view.fields[title] == .string("from B"))
        // The conflict is listed, with the loser kept.
        let conflict = try #require(a.conflicts.first)
        #expect(a.conflicts.count == 1 && conflict.item == item && conflict.field == title)
        #expect(conflict.values == [.string("from B"), .string("from A")] && conflict.shown == .string("from B"))
        // Who wrote each value, the shown one first.
        #expect(conflict.versions.map(\.dot.node) == [.node(2), .node(1)])
        #expect(a.conflicts == b.conflicts)
        // Resolving closes it everywhere.
        try a.apply(.resolve(title, .string("from A")), to: item, wallMilliseconds: t0 + 30)
        sync(&a, &b)
        #expect(b.conflicts.isEmpty)
        #expect(b.items[item]!.view.fields[title] == .string("from A"))
        // Resolving a field without a conflict is refused.
        #expect(throws: EditError.noConflict(item, title)) {
            try a.apply(.resolve(title, .null), to: item, wallMilliseconds: t0)
        }
    }

    @Test func deleteWinsOverConcurrentEditAndRestoreBringsItBack() throws {
        var (a, b) = try pair()
        try a.apply(.delete, to: item, wallMilliseconds: t0 + 10)
        try b.apply(
            .update([.set(.named("note"), .string("edited while deleted elsewhere"))]),
            to: item,
            wallMilliseconds: t0 + 20
        )
        sync(&a, &b)
        #expect(a.items[item]!.isDeleted && b.items[item]!.isDeleted)
        #expect(throws: EditError.itemDeleted(item)) {
            try b.apply(.update([.set(.named("x"), .null)]), to: item, wallMilliseconds: t0)
        }
        try b.apply(.restore, to: item, wallMilliseconds: t0 + 30)
        sync(&a, &b)
        let view = a.items[item]!.view
        #expect(!view.deleted)
        #expect(view.fields[.named("note")] == .string("edited while deleted elsewhere"))
        #expect(view.fields[.named("title")] == .string("Climb"))
    }

    @Test func concurrentDeleteAndRestoreKeepsTheItemDeleted() throws {
        var (a, b) = try pair()
        try a.apply(.delete, to: item, wallMilliseconds: t0 + 10)
        sync(&a, &b)
        try a.apply(.restore, to: item, wallMilliseconds: t0 + 20)
        try b.apply(.restore, to: item, wallMilliseconds: t0 + 20)
        try b.apply(.delete, to: item, wallMilliseconds: t0 + 30)
        sync(&a, &b)
        #expect(a.items[item]!.isDeleted && b.items[item]!.isDeleted)
    }

    /// A node whose clock is an hour behind writes after seeing a value: its write wins, because
    /// causality decides; the clock only orders concurrent writes.
    @Test func skewedClockCannotOverwriteCausallyLaterValue() throws {
        var (a, b) = try pair()
        let title = FieldName.named("title")
        try b.apply(.update([.set(title, .string("new"))]), to: item, wallMilliseconds: t0 + 5_000)
        sync(&a, &b)
        try a.apply(
            .update([.set(title, .string("newer, from the slow clock"))]),
            to: item,
            wallMilliseconds: t0 - 3_600_000
        )
        sync(&a, &b)
        #expect(b.items[item]!.view.fields[title] == .string("newer, from the slow clock"))
        #expect(b.conflicts.isEmpty)

        // And at the field level, with no clock help at all: a write carrying an older timestamp
        // that has seen a newer one still supersedes it.
        var field = FieldState()
        field.assign(
            .string("later in wall time"),
            dot: Dot(node: .node(2), counter: 1),
            timestamp: HLCTimestamp(milliseconds: t0, logical: 0)
        )
        var behind = field
        behind.assign(
            .string("causally later"),
            dot: Dot(node: .node(1), counter: 1),
            timestamp: HLCTimestamp(milliseconds: t0 - 3_600_000, logical: 0)
        )
        #expect(field.merged(with: behind).shownValue == .string("causally later"))
        #expect(!field.merged(with: behind).hasConflict)
        // The older value, arriving again later, never comes back.
        #expect(behind.merged(with: field).shownValue == .string("causally later"))
    }

    @Test func invalidEditsChangeNothing() throws {
        var (a, _) = try pair(tags: [.string("x")])
        let before = a.items
        let counterBefore = a.versionVector
        #expect(throws: EditError.notAList(item, .named("title"), kind: "string")) {
            try a.apply(
                .update([.set(.named("ok"), .integer(1)), .add(.named("title"), .string("x"))]),
                to: item,
                wallMilliseconds: t0
            )
        }
        #expect(throws: EditError.itemExists(item)) {
            try a.apply(.create(type: "task", assignments: []), to: item, wallMilliseconds: t0)
        }
        #expect(throws: EditError.unknownItem(.named("nope"))) {
            try a.apply(.update([.set(.named("a"), .null)]), to: .named("nope"), wallMilliseconds: t0)
        }
        #expect(throws: EditError.noAssignments) { try a.apply(.update([]), to: item, wallMilliseconds: t0) }
        #expect(throws: EditError.itemNotDeleted(item)) { try a.apply(.restore, to: item, wallMilliseconds: t0) }
        let big = Value.string(String(repeating: "x", count: Limits.maxValueBytes))
        #expect(throws: EditError.valueTooLarge(.named("big"), bytes: big.encodedSize)) {
            try a.apply(.update([.set(.named("big"), big)]), to: item, wallMilliseconds: t0)
        }
        #expect(throws: EditError.self) {
            try a.apply(.create(type: "", assignments: []), to: .named("other"), wallMilliseconds: t0)
        }
        #expect(a.items == before)
        #expect(a.versionVector == counterBefore)
    }

    @Test func oneEditIsOneDot() throws {
        var a = Replica(nodeID: .node(1))
        let dot = try a.apply(
            .create(
                type: "task",
                assignments: [
                    .set(.named("a"), .integer(1)), .add(.named("tags"), .string("x")),
                    .add(.named("tags"), .string("y")), .remove(.named("tags"), .string("x")),
                ]
            ),
            to: item,
            wallMilliseconds: t0
        )
        #expect(dot == Dot(node: .node(1), counter: 1))
        #expect(a.versionVector[.node(1)] == 1)
        #expect(a.items[item]!.view.fields[.named("tags")] == .list([.string("y")]))
        #expect(a.items[item]!.fields.values.allSatisfy { $0.versions.map(\.dot) == [dot] })
    }
}

extension ScenarioTests {
    /// Elements added by one edit keep the order the user gave; later adds go after them.
    @Test func oneWriteKeepsTheGivenListOrder() throws {
        var a = Replica(nodeID: .node(1))
        let tags = FieldName.named("tags")
        try a.apply(
            .create(type: "t", assignments: [.set(tags, .list([.string("z"), .string("a"), .string("m")]))]),
            to: item,
            wallMilliseconds: t0
        )
        try a.apply(.update([.add(tags, .string("y")), .add(tags, .string("b"))]), to: item, wallMilliseconds: t0 + 1)
        try a.apply(.update([.add(tags, .string("z"))]), to: item, wallMilliseconds: t0 + 2)
        #expect(a.items[item]!.view.fields[tags] == .list(["z", "a", "m", "y", "b"].map(Value.string)))
    }

    /// Two machines creating one id with different types leave a `_type` conflict that a
    /// resolution settles, with the value checked as a type.
    @Test func typeConflictsAreListedAndResolvable() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        try a.apply(.create(type: "task", assignments: []), to: item, wallMilliseconds: t0)
        try b.apply(.create(type: "note", assignments: []), to: item, wallMilliseconds: t0 + 1)
        sync(&a, &b)
        #expect(a.items[item]!.view.conflicts == [.type])
        #expect(throws: EditError.invalidType("(integer, not text)")) {
            try a.apply(.resolve(.type, .integer(1)), to: item, wallMilliseconds: t0 + 2)
        }
        try a.apply(.resolve(.type, .string("task")), to: item, wallMilliseconds: t0 + 2)
        sync(&a, &b)
        #expect(b.items[item]!.view.conflicts.isEmpty && b.items[item]!.type == "task")
    }
}

extension ScenarioTests {
    /// The relay's refusal supersedes the refused version everywhere, whatever the merge order,
    /// names it, and survives both encodings.
    @Test func anOverruleConvergesAndNamesWhatItRefused() throws {
        let writer = Dot(node: .node(1), counter: 10)
        var base = FieldState()
        base.assign(.string("ok"), dot: Dot(node: .node(1), counter: 5), timestamp: HLCTimestamp(rawValue: 5))
        var refused = base
        refused.assign(.string(String(repeating: "x", count: 5000)), dot: writer, timestamp: HLCTimestamp(rawValue: 10))
        var relay = base
        relay.overrule(
            refused,
            keeping: relay.shownValue!,
            reason: "too big",
            dot: Dot(node: .node(9), counter: 20),
            timestamp: HLCTimestamp(rawValue: 20)
        )
        #expect(relay.shownValue == .string("ok"))
        #expect(relay.versions.count == 1)
        if case let .overrule(_, rejected, reason)? = relay.versions.first?.write {
            #expect(rejected == [writer] && reason == "too big")
        } else {
            Issue.record("not an overrule")
        }
        // The writer, merging the relay's state, shows the kept value; every order agrees.
        #expect(refused.merged(with: relay) == relay.merged(with: refused))
        #expect(refused.merged(with: relay).shownValue == .string("ok"))
        #expect(!refused.merged(with: relay).hasConflict)
        #expect(try FieldState(decoding: relay.encoded) == relay)
    }
}

/// Removing a field (`lansync unset`): a write of "absent" that merges like any other.
@Suite struct UnsetTests {
    static let id = ItemID.named("u")
    static let f = FieldName.named("f")

    /// Two replicas that hold the item with `f = 1`.
    func pair() throws -> (Replica, Replica) {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        try a.apply(
            .create(type: "task", assignments: [.set(Self.f, .integer(1))]),
            to: Self.id,
            wallMilliseconds: 1_000
        )
        send(a, to: &b)
        return (a, b)
    }

    func send(_ from: Replica, to: inout Replica) {
        for batch in from.delta(for: to.versionVector) { to.apply(batch, wallMilliseconds: 5_000) }
    }

    @Test func anUnsetHidesTheFieldAndSyncs() throws {
        var (a, b) = try pair()
        try a.apply(.update([.unset(Self.f)]), to: Self.id, wallMilliseconds: 2_000)
        #expect(a.items[Self.id]?.shownFields[Self.f] == nil)
        #expect(a.items[Self.id]?.conflicts.isEmpty == true)
        send(a, to: &b)
        #expect(b.items[Self.id]?.shownFields[Self.f] == nil && b.items[Self.id] == a.items[Self.id])
        // Removing what is not shown is refused, and changes nothing.
        #expect(throws: EditError.noField(Self.id, Self.f)) {
            try a.apply(.update([.unset(Self.f)]), to: Self.id, wallMilliseconds: 3_000)
        }
        // A later set brings the field back; a list add on a removed field makes a list.
        try a.apply(.update([.add(Self.f, .string("x"))]), to: Self.id, wallMilliseconds: 4_000)
        #expect(a.items[Self.id]?.shownFields[Self.f] == .list([.string("x")]))
    }

    /// A set and an unset of one field made concurrently are a conflict on both replicas, not a
    /// silent loss, whichever is shown; settled by a value, or by removing the field.
    @Test func aConcurrentSetAndUnsetConflict() throws {
        for settleByRemoving in [false, true] {
            var (a, b) = try pair()
            try a.apply(.update([.unset(Self.f)]), to: Self.id, wallMilliseconds: 2_000)
            try b.apply(.update([.set(Self.f, .integer(2))]), to: Self.id, wallMilliseconds: 2_001)
            send(b, to: &a)
            send(a, to: &b)
            #expect(a.items[Self.id] == b.items[Self.id])
            let conflict = try #require(a.items[Self.id]?.conflicts.first)
            #expect(conflict.field == Self.f && conflict.removed && conflict.values == [.integer(2)])
            #expect(conflict.shown == .integer(2), "the later write is shown")
            try a.apply(.resolve(Self.f, settleByRemoving ? nil : .integer(2)), to: Self.id, wallMilliseconds: 3_000)
            send(a, to: &b)
            #expect(b.items[Self.id]?.conflicts.isEmpty == true)
            #expect(b.items[Self.id]?.shownFields[Self.f] == (settleByRemoving ? nil : .integer(2)))
        }
    }

    @Test func anUnsetSurvivesTheCodecs() throws {
        var (a, _) = try pair()
        try a.apply(.update([.unset(Self.f)]), to: Self.id, wallMilliseconds: 2_000)
        let state = try #require(a.items[Self.id]?.fields[Self.f])
        var writer = ByteWriter()
        var form = AbsoluteForm()
        FieldStateCodec.write(state, to: &writer, form: &form, removalLog: .present)
        var reader = ByteReader(writer.bytes)
        let back = try FieldStateCodec.read(from: &reader, form: AbsoluteForm(), removalLog: .present)
        #expect(back == state && back.versions.first?.write == .unset)
    }
}
