import Foundation
import LansyncCore
import LansyncHost
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Testing

/// Importing JSON Lines into a real replica file: what a line says becomes the fewest edits, and
/// a bad line is refused with its number and leaves the replica as it was.
@Suite struct ItemImportTests {
    let dir = makeTemporaryDirectory("item-import")
    let t0: UInt64 = 1_700_000_000_000

    func store(_ file: String = "replica") throws -> ReplicaStore {
        try ReplicaStore.create(
            path: dir + "/\(file).sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "n1",
            fingerprint: "fp",
            lease: WriterLease(directory: dir)
        )
    }

    /// Imports `lines`, fed in chunks of `chunk` bytes (so lines straddle chunks).
    @discardableResult
    func importLines(_ lines: [String], into store: ReplicaStore, chunk: Int = 7) throws -> ItemImport.Progress {
        var input = Data(lines.joined(separator: "\n").utf8)[...]
        var result = ItemImport.Progress()
        try store.applyEdits(wallMilliseconds: t0) { session in
            result = try ItemImport.run(
                {
                    guard !input.isEmpty else { return nil }
                    defer { input = input.dropFirst(chunk) }
                    return Data(input.prefix(chunk))
                },
                into: &session
            )
        }
        return result
    }

    @Test func anExportChangesNothingInItsOwnReplica() throws {
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
        let before = try store.changeStamp()
        let result = try importLines(export, into: store)
        #expect(result.lines == 2)
        #expect(result.edits == 0)
        #expect(try store.changeStamp() == before)
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
        let result = try importLines(
            [#"{"id":"a","fields":{"title":"Climb","n":2}}"#, "", #"{"id":"c","type":"note","fields":{}}"#],
            into: store
        )
        #expect(result.lines == 2)
        #expect(result.edits == 2)
        let a = try #require(try store.itemState(.named("a")))
        #expect(a.shownFields[.named("n")] == .integer(2))
        #expect(try store.itemState(.named("c"))?.type == "note")
    }

    /// Lines without an id get one derived from the line (and its repetition): importing the
    /// same input again, say after a failure, edits the same items instead of doubling them.
    @Test func idlessLinesKeepTheirIdsWhenImportedAgain() throws {
        let store = try store()
        let lines = [#"{"type":"task","fields":{"title":"Climb"}}"#, #"{"fields":{"n":1}}"#, #"{"fields":{"n":1}}"#]
        try importLines(lines, into: store)
        var ids: [String] = []
        try store.forEachItem { ids.append($0.id.rawValue) }
        #expect(ids.count == 3, "two identical lines are two items: \(ids)")
        #expect(ids.allSatisfy { $0.count == 36 && Array($0)[14] == "8" }, "UUIDv8 ids: \(ids)")
        let again = try importLines(lines, into: store, chunk: 3)
        #expect(again.edits == 0)
        var after: [String] = []
        try store.forEachItem { after.append($0.id.rawValue) }
        #expect(after == ids)
    }

    @Test func aBadLineIsNamedAndNothingIsWritten() throws {
        let store = try store()
        let before = try store.changeStamp()
        #expect(
            throws: HostError("line 2: unknown key 'colour' (expected id, type, fields, deleted); nothing was imported")
        ) {
            try importLines([#"{"id":"a","fields":{}}"#, #"{"id":"b","colour":"red"}"#], into: store)
        }
        #expect(throws: HostError.self) { try importLines(["not json"], into: store) }
        #expect(try store.changeStamp() == before)
        #expect(try store.itemState(.named("a")) == nil)
    }

    /// Lines are found wherever the input's chunks cut them: CRLF endings, blank and
    /// whitespace-only lines, a last line with and without its newline; a bad line is named by
    /// its number in the input, blank lines counted.
    @Test func linesAreFoundWhereverTheChunksCutThem() throws {
        let lines = [
            #"{"id":"a","fields":{"n":1}}\#r"#, "", "  \t", #"{"id":"b","fields":{"s":"x\ny"}}"#, "\r",
            #"{"id":"c","fields":{}}"#, "",
        ]
        for chunk in [1, 2, 5, 64, 1 << 20] {
            let store = try store("chunks-\(chunk)")
            let progress = try importLines(lines, into: store, chunk: chunk)
            #expect(progress.lines == 3, "chunks of \(chunk)")
            #expect(try store.itemState(.named("b"))?.shownFields[.named("s")] == .string("x\ny"), "chunks of \(chunk)")
            #expect(try store.itemState(.named("c"))?.exists == true, "chunks of \(chunk)")
            #expect(
                throws: HostError("line 4: not JSON (expected a member name in quotes at byte 1); nothing was imported")
            ) {
                try importLines(["", #"{"id":"d"}"#, "", "{"], into: store, chunk: chunk)
            }
            #expect(try store.itemState(.named("d")) == nil, "chunks of \(chunk)")
        }
    }

    @Test func aDeletedItemIsNotBroughtBackByALineThatSaysNothingOfDeletion() throws {
        let store = try store()
        try store.apply(.create(type: "task", assignments: []), to: .named("a"), wallMilliseconds: t0)
        try store.apply(.delete, to: .named("a"), wallMilliseconds: t0 + 1)
        #expect(throws: HostError.self) { try importLines([#"{"id":"a","fields":{"k":1}}"#], into: store) }
        #expect(try store.itemState(.named("a"))?.isDeleted == true)
        let restored = try importLines([#"{"id":"a","fields":{"k":1},"deleted":false}"#], into: store)
        #expect(restored.edits == 2)
        #expect(try store.itemState(.named("a"))?.isDeleted == false)
    }
}
