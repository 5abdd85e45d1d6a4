import Foundation
import LansyncTestSupport
import Testing

/// Signed writes on the real binaries (issue 64, Docs/SECURITY.md "Signed writes"): what a
/// member writes, from the CLI or its node, is signed in the transaction that writes it, and
/// reaches a machine that never met it with its signatures intact, passed on second-hand by a
/// relay on PostgreSQL: the third machine keeps a run only if its signature holds there.
@Suite(.serialized) struct SignedWriteTests {
    /// The signed runs of `writer` in a replica in use, first dot and signature (hex, lower case).
    static func runs(_ file: String, of writer: String) throws -> [String] {
        try AuthorshipTests.sqlite(
            file,
            "SELECT r.first || ':' || lower(hex(r.signature)) FROM signed_run r JOIN node n ON n.id = r.node WHERE n.node_id = '\(writer)' ORDER BY r.first"
        ).split(separator: "\n").map(String.init)
    }

    @Test func writesReachAMachineThatNeverMetTheirWriterWithTheirSignatures() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("signed-writes")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        // Offline on a: an item of two fields, then one of them written again, so the first
        // write's run holds a version a no longer has (its proof carries that version's digest).
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t", "n=1", "m=1"])
        try await cli.ok(["set", "--dir", cli.path("a"), "t", "n=2"])
        let writer = try AuthorshipTests.sqlite(
            cli.path("a/replica.sqlite"),
            "SELECT value FROM meta WHERE key = 'writer_id'"
        )
        let signed = try Self.runs(cli.path("a/replica.sqlite"), of: writer)
        #expect(signed.count == 2, "one run a command's commit: \(signed)")
        let p = freePorts(3)
        let relay = try await cli.relay(
            port: p[0],
            name: "r1",
            extra: ["--store", server.uri, "--authority", server.uri]
        )
        defer { relay.stop() }
        let a = try await cli.node("a", port: p[1], relays: [p[0]])
        #expect(try await cli.waitForConvergence(["r1", "a"].map(cli.path)) != nil)
        #expect(a.stop() == 0)
        // The relay checked a's runs and kept them, with the digest of the version a replaced.
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        let held = try server.sql(
            "SELECT first || ':' || encode(signature, 'hex') FROM \(schema).signed_run WHERE node_id = '\(writer)' ORDER BY first"
        )
        #expect(held == signed)
        #expect(try server.sql("SELECT count(*) FROM \(schema).run_leaf WHERE node_id = '\(writer)'") == ["1"])
        // b never meets a: everything of a's comes from the relay, and b keeps a run only if it
        // holds there.
        let b = try await cli.node("b", port: p[2], relays: [p[0]])
        defer { b.stop() }
        #expect(try await cli.waitForConvergence(["r1", "b"].map(cli.path)) != nil)
        #expect(try Self.runs(cli.path("b/replica.sqlite"), of: writer) == signed)
        let leaves = "SELECT count(*) FROM run_leaf l JOIN node n ON n.id = l.node WHERE n.node_id = '\(writer)'"
        #expect(try AuthorshipTests.sqlite(cli.path("b/replica.sqlite"), leaves) == "1")
        // b's history says every version of t, the one a replaced too, is signed.
        let history = try await cli.ok(["history", "--dir", cli.path("b"), "t", "--all", "--json"])
        #expect(history.contains("\"signed\":true") && !history.contains("\"signed\":false"), "\(history)")
        // b's own edit is signed by b, and reaches the relay so.
        try await cli.ok(["set", "--dir", cli.path("b"), "t", "m=3"])
        let bWriter = try AuthorshipTests.sqlite(
            cli.path("b/replica.sqlite"),
            "SELECT value FROM meta WHERE key = 'writer_id'"
        )
        #expect(try Self.runs(cli.path("b/replica.sqlite"), of: bWriter).count == 1)
        #expect(try await cli.waitForConvergence(["r1", "b"].map(cli.path)) != nil)
        let relayed = try server.sql("SELECT count(*) FROM \(schema).signed_run WHERE node_id = '\(bWriter)'")
        #expect(relayed == ["1"])
    }
}
