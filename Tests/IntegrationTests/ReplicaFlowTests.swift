import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
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

    /// `conflicts` shows each value whole, whatever the terminal's width (the differing part is
    /// what matters), with who wrote it and when; the shown one is marked.
    @Test func conflictsShowEachValueWholeWithItsWriter() async throws {
        let cli = CLI("conflict-human")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let a = ["--dir", cli.path("a")]
        let b = ["--dir", cli.path("b")]
        try await cli.ok(["add"] + a + ["--id", "bike", "title=Fix the bike"])
        try Self.exchange(cli.path("a"), cli.path("b"))
        let fromA = "Fix the bike (garage, back wheel, the spoke that keeps coming loose)"
        let fromB = "Fix the bike (garage, front brake cable and the bell)"
        try await cli.ok(["set"] + a + ["bike", "title=\(fromA)"])
        await waitForTheNextMillisecond()
        try await cli.ok(["set"] + b + ["bike", "title=\(fromB)"])
        try Self.exchange(cli.path("a"), cli.path("b"))
        let shown = try await cli.run(["conflicts"] + b, environment: ["COLUMNS": "60"])
        #expect(shown.succeeded, "\(shown.stderr)")
        let rows = shown.stdout.split(separator: "\n").map(String.init)
        let rowA = try #require(rows.first { $0.contains(fromA) }, "\(shown.stdout)")
        let rowB = try #require(rows.first { $0.contains(fromB) }, "\(shown.stdout)")
        // B's write is the later one: shown, marked, on the conflict's first row with the item.
        #expect(rowB.contains("* ") && rowB.hasPrefix("bike") && !rowA.contains("* "), "\(shown.stdout)")
        // The writer: B names itself; A is known by its id's start.
        #expect(rowB.contains("b ("), "\(rowB)")
        let aID = try JSON(parsing: try await cli.ok(["status", "--json"] + a))["node_id"]
        guard case .string(let idA)? = aID else {
            Issue.record("no node id: \(String(describing: aID))")
            return
        }
        #expect(rowA.contains(String(idA.prefix(7))), "\(rowA)")
        #expect(rows.contains { $0.contains("2026-") || $0.contains("T") && $0.contains("Z") })
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
        await waitForTheNextMillisecond()
        try await cli.ok(["set"] + b + ["t1", "title=from B"])
        try Self.exchange(cli.path("a"), cli.path("b"))
        try Self.exchange(cli.path("b"), cli.path("a"))
        for dir in [a, b] {
            let conflicts = try JSON(parsing: try await cli.ok(["conflicts"] + dir + ["--json"]))
            guard case .array(let all) = conflicts, all.count == 1, let conflict = all.first else {
                Issue.record("one conflict expected: \(conflicts)")
                return
            }
            #expect(conflict["id"] == .string("t1") && conflict["field"] == .string("title"))
            #expect(conflict["values"] == .array([.string("from B"), .string("from A")]))
            #expect(conflict["shown"] == .string("from B"))
            // Each value with who wrote it and when, the shown one first.
            guard case .array(let versions)? = conflict["versions"] else {
                Issue.record("no versions: \(conflict)")
                return
            }
            #expect(versions.compactMap { $0["value"] } == [.string("from B"), .string("from A")])
            #expect(versions.allSatisfy { if case .string? = $0["time"] { true } else { false } })
            #expect(Set(versions.compactMap { $0["node"] }).count == 2)
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
