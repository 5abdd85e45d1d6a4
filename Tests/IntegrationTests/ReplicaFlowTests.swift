import Foundation
import LansyncCore
import LansyncJSON
import LansyncStore
import LansyncTestSupport
import Testing

/// Conflicts, export/import and copied directories, through the real binary on real files.
@Suite(.serialized) struct ReplicaFlowTests {
    /// Exchanges deltas between two data directories' replica files (the sync issue does this over
    /// the network; here the files are merged in-process).
    static func exchange(_ from: String, _ to: String) throws {
        let a = try ReplicaStore.open(path: from + "/replica.sqlite")
        let b = try ReplicaStore.open(path: to + "/replica.sqlite")
        var stream = try a.deltaStream(for: try b.versionVector())
        while let batch = try stream.next() { try b.apply(batch, wallMilliseconds: 0) }
    }

    @Test func conflictsAreListedResolvedAndKeptInHistory() async throws {
        let cli = CLI("conflict")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let a = ["--dir", cli.path("a")]
        let b = ["--dir", cli.path("b")]
        try await cli.ok(["add"] + a + ["--id", "t1", "--type", "task", "title=Climb"])
        try Self.exchange(cli.path("a"), cli.path("b"))
        try await cli.ok(["set"] + a + ["t1", "title=from A", "location=Fontainebleau"])
        try await Task.sleep(for: .milliseconds(5))
        try await cli.ok(["set"] + b + ["t1", "title=from B"])
        try Self.exchange(cli.path("a"), cli.path("b"))
        try Self.exchange(cli.path("b"), cli.path("a"))
        for dir in [a, b] {
            let conflicts = try await cli.ok(["conflicts"] + dir + ["--json"]).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            #expect(conflicts == #"[{"id":"t1","field":"title","values":["from B","from A"],"shown":"from B"}]"#)
            let item = try await cli.ok(["get"] + dir + ["t1", "--json"])
            #expect(item.contains(#""location":"Fontainebleau""#) && item.contains(#""conflicts":["title"]"#))
        }
        try await cli.ok(["resolve"] + b + ["t1", "title", "Climb together"])
        try Self.exchange(cli.path("b"), cli.path("a"))
        #expect(
            try await cli.ok(["conflicts"] + a + ["--json"]).trimmingCharacters(in: .whitespacesAndNewlines) == "[]"
        )
        let history = try await cli.ok(["history"] + a + ["t1", "title", "--json"])
        #expect(
            history.contains(#""set":"from A""#) && history.contains(#""set":"from B""#)
                && history.contains(#""set":"Climb together""#)
        )
    }

    @Test func exportImportRoundTrips() async throws {
        let cli = CLI("export")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let a = ["--dir", cli.path("a")]
        let b = ["--dir", cli.path("b")]
        try await cli.ok(
            ["add"] + a + ["--id", "one", "--type", "task", "n=1", "d=-0.0", #"u="é""#, #"tags=["x","y"]"#]
        )
        try await cli.ok(["add"] + a + ["--id", "two", "k=true"])
        try await cli.ok(["rm"] + a + ["two"])
        try await cli.ok(["export"] + a + [cli.path("out.jsonl")])
        let exported = try String(contentsOfFile: cli.path("out.jsonl"), encoding: .utf8)
        #expect(exported == (try await cli.ok(["export"] + a)))
        #expect(exported.split(separator: "\n").count == 2)

        try await cli.ok(["import"] + b + [cli.path("out.jsonl")])
        #expect(try await cli.ok(["export"] + b) == exported)

        // Importing an export into its own replica changes nothing.
        let vvBefore = try ReplicaStore.open(path: cli.path("a/replica.sqlite")).versionVector()
        try await cli.ok(["import"] + a, input: exported)
        #expect(try ReplicaStore.open(path: cli.path("a/replica.sqlite")).versionVector() == vvBefore)

        // Lines without an id create new items; a known id gets what differs.
        try await cli.ok(
            ["import"] + b,
            input: "{\"fields\":{\"new\":1}}\n\n{\"id\":\"one\",\"fields\":{\"n\":2},\"deleted\":true}\n"
        )
        let one = try await cli.ok(["get"] + b + ["one", "--json"])
        #expect(one.contains(#""n":2"#) && one.contains(#""deleted":true"#) && one.contains(#""tags":["x","y"]"#))
        #expect(try await cli.ok(["list"] + b + ["--json"]).contains(#""new":1"#))
    }

    @Test func aCopiedDirectoryTakesItsOwnIdentity() async throws {
        let cli = CLI("copy")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "k", "v=1"])
        let original = try ReplicaStore.open(path: cli.path("a/replica.sqlite")).info().nodeID
        try FileManager.default.copyItem(atPath: cli.path("a"), toPath: cli.path("copy"))
        let result = try await cli.run(["set", "--dir", cli.path("copy"), "k", "v=2"])
        #expect(result.succeeded)
        #expect(result.stderr.contains("copied or moved"))
        let copy = try ReplicaStore.open(path: cli.path("copy/replica.sqlite"))
        #expect(try copy.info().nodeID != original)
        let writers = try copy.history(.named("k"), field: .named("v")).map(\.dot.node)
        #expect(writers == [try copy.info().nodeID, original])
        // The original keeps its id, and says nothing.
        let again = try await cli.run(["set", "--dir", cli.path("a"), "k", "v=3"])
        #expect(again.succeeded && again.stderr.isEmpty)
        #expect(try ReplicaStore.open(path: cli.path("a/replica.sqlite")).info().nodeID == original)
    }
}
