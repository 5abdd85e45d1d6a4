import Foundation
import LansyncCore
import LansyncHost
import LansyncStore
import LansyncTestSupport
import Testing

/// Import planning against a real replica file: what a line says becomes the fewest edits, and a
/// bad line is refused with its number before anything is written.
@Suite struct ImportPlanTests {
    let dir = makeTemporaryDirectory("import-plan")
    let t0: UInt64 = 1_700_000_000_000

    func store() throws -> ReplicaStore {
        try ReplicaStore.create(
            path: dir + "/replica.sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "n1",
            fingerprint: "fp",
            lease: WriterLease(directory: dir)
        )
    }

    func plan(_ lines: [String], _ store: ReplicaStore) throws -> ImportPlan {
        try ImportPlan(input: Data(lines.joined(separator: "\n").utf8), store: store, wallMilliseconds: t0)
    }

    @Test func anExportPlansNothingAgainstItsOwnReplica() throws {
        let store = try store()
        try store.apply(
            .create(type: "task", assignments: [.set(.named("title"), .string("Climb"))]),
            to: .named("a"),
            wallMilliseconds: t0
        )
        try store.apply(.create(type: "note", assignments: []), to: .named("b"), wallMilliseconds: t0 + 1)
        try store.apply(.delete, to: .named("b"), wallMilliseconds: t0 + 2)
        var export: [String] = []
        try store.forEachItem(includeDeleted: true) { export.append($0.jsonText) }
        let plan = try plan(export, store)
        #expect(plan.lineCount == 2)
        #expect(plan.edits.isEmpty)
    }

    @Test func aLineBecomesOnlyWhatDiffers() throws {
        let store = try store()
        try store.apply(
            .create(
                type: "task",
                assignments: [.set(.named("title"), .string("Climb")), .set(.named("n"), .integer(1))]
            ),
            to: .named("a"),
            wallMilliseconds: t0
        )
        let plan = try plan(
            [#"{"id":"a","fields":{"title":"Climb","n":2}}"#, #"{"id":"c","type":"note","fields":{}}"#],
            store
        )
        #expect(plan.edits.count == 2)
        #expect(plan.edits[0].0 == .named("a"))
        #expect(plan.edits[0].1 == .update([.set(.named("n"), .integer(2))]))
        #expect(plan.edits[1].1 == .create(type: "note", assignments: []))
    }

    @Test func aBadLineIsNamedAndNothingIsWritten() throws {
        let store = try store()
        let before = try store.versionVector()
        #expect(
            throws: HostError("line 2: unknown key 'colour' (expected id, type, fields, deleted); nothing was imported")
        ) {
            try plan([#"{"id":"a","fields":{}}"#, #"{"id":"b","colour":"red"}"#], store)
        }
        #expect(throws: HostError.self) { try plan(["not json"], store) }
        #expect(try store.versionVector() == before)
        #expect(try store.itemState(.named("a")) == nil)
    }

    @Test func aDeletedItemIsNotBroughtBackByALineThatSaysNothingOfDeletion() throws {
        let store = try store()
        try store.apply(.create(type: "task", assignments: []), to: .named("a"), wallMilliseconds: t0)
        try store.apply(.delete, to: .named("a"), wallMilliseconds: t0 + 1)
        #expect(throws: HostError.self) { try plan([#"{"id":"a","fields":{"k":1}}"#], store) }
        let restored = try plan([#"{"id":"a","fields":{"k":1},"deleted":false}"#], store)
        #expect(restored.edits.map(\.1) == [.restore, .update([.set(.named("k"), .integer(1))])])
    }
}
