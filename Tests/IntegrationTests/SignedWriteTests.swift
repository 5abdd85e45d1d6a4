import Foundation
import LansyncJSON
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
        // The members' certificates travelled with their runs: the relay keeps a's and b's, and
        // b, which never met a, keeps a's (its own it sends from its node's file).
        #expect(try server.sql("SELECT count(*) FROM \(schema).member_certificate") == ["2"])
        #expect(
            try AuthorshipTests.sqlite(cli.path("b/replica.sqlite"), "SELECT count(*) FROM member_certificate") == "1"
        )
    }

    /// Where signed writes are required (`cluster set signed-writes on`), a member's write under
    /// another member's writer id is refused by a node, a relay on SQLite and one on PostgreSQL:
    /// sent unsigned, and in a run signed with the rogue's own key (whose fingerprint is not the
    /// writer's member's); and a write under a writer of a key the rogue made up, in a run that
    /// key signed (no member certificate names the key). Each overrules it (the field keeps its value, `history` and `status`
    /// say why), and the honest cluster converges without it. Before the setting, the same
    /// write is taken (it changes the field): what the setting changes is shown, not assumed.
    @Test func aWriteUnderAnotherMembersWriterIsRefusedWhereSignaturesAreRequired() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("required-signatures")
        defer { cli.cleanUp() }
        // c is a member that never runs: the rogue m writes under its writer id. (Under a
        // running member's, that member's vector would not take the overrules' claims on its own
        // writers, ``OwnWitness``: the data converges, the vectors differ on that writer.)
        try await cli.cluster(["r", "r1", "a", "b", "c", "m"])
        let p = freePorts(4)
        let r = try await cli.relay(port: p[0])
        let r1 = try await cli.relay(port: p[1], name: "r1", extra: ["--store", server.uri, "--authority", server.uri])
        // A chain: r, a, b, r1 (a node keeps its first relay only).
        let a = try await cli.node("a", port: p[2], relays: [p[0]], peers: [p[3]])
        let b = try await cli.node("b", port: p[3], relays: [p[1]])
        defer {
            for process in [r, r1, a, b] { process.stop() }
        }
        let all = ["r", "r1", "a", "b"].map(cli.path)
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t", "n=1"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "u", "n=1"])
        #expect(try await cli.waitForConvergence(all) != nil)
        let cWriter = try AuthorshipTests.sqlite(
            cli.path("c/replica.sqlite"),
            "SELECT value FROM meta WHERE key = 'writer_id'"
        )
        let over = try await AuthorshipTests().lastDot(cli, "a", "t")
        func forge(
            _ port: Int,
            counter: Int,
            value: String,
            signed: Bool = false,
            stranger: Bool = false
        )
            async throws
        {
            let answer = try await cli.run(
                [
                    // The rogue listens this long before it hangs up (the target does not close):
                    // in a loaded CI run a relay on PostgreSQL took longer than half a second to
                    // say hello.
                    "rogue-member", "--dir", cli.path("m"), "--peer", "127.0.0.1:\(port)", "--seconds", "5",
                    "--forge-write", "\(cWriter):\(counter)", "--forge-item", "t", "--forge-field", "n",
                    "--forge-value", value, "--forge-over", "\(over.writer):\(over.counter)",
                ] + (signed ? ["--forge-sign"] : []) + (stranger ? ["--forge-stranger"] : []),
                binary: CLI.debugBinary
            )
            #expect(answer.stdout.contains("hello"), "the rogue's session: \(answer.stdout)\(answer.stderr)")
        }
        func value(_ dir: String) async throws -> JSON? {
            try JSON(parsing: try await cli.ok(["get", "--dir", cli.path(dir), "t", "--json"]))["fields"]?["n"]
        }

        // Not required yet: c's writer id is taken on the rogue's word (the gap this closes).
        try await forge(p[2], counter: 1000, value: "taken")
        #expect(try await eventually { try await value("a") == .string("taken") })
        #expect(try await cli.waitForConvergence(all) != nil)

        let set = try await cli.ok(["cluster", "set", "--dir", cli.path("a"), "signed-writes", "on"])
        #expect(set.contains("signed-writes on"), "\(set)")
        for dir in ["r", "b"] {
            #expect(
                try await eventually(within: .seconds(30)) {
                    try await cli.ok(["cluster", "set", "--dir", cli.path(dir)]).contains("signed-writes on")
                },
                "\(dir) holds the setting"
            )
        }
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        #expect(
            try await eventually(within: .seconds(30)) {
                try server.sql("SELECT count(*) FROM \(schema).statement WHERE get_byte(record, 0) = 7") != ["0"]
            },
            "the relay on PostgreSQL holds the setting"
        )
        // Past what anyone holds of c's writer (1000, the write taken above).
        let forged = 5000
        let before = try await value("a")
        try await forge(p[2], counter: Int(forged), value: "forged to a")
        try await forge(p[0], counter: Int(forged) + 1, value: "forged to r", signed: true)
        try await forge(p[1], counter: Int(forged) + 2, value: "forged to r1")
        // A writer of a key no certificate names, its run signed with that key and sent with
        // the rogue's own (valid) certificate: the run is whole and its key fits its writer, so
        // only the authority's certificate tells it from a member's.
        try await forge(p[2], counter: Int(forged) + 3, value: "stranger to a", stranger: true)
        try await forge(p[1], counter: Int(forged) + 4, value: "stranger to r1", stranger: true)

        // Each target overruled its forged write: an overrule of its own has seen it.
        let refusal = "SELECT count(*) FROM \(schema).rejection WHERE reason LIKE 'written unsigned %'"
        #expect(try await eventually(within: .seconds(30)) { try server.sql(refusal) != ["0"] }, "r1 refused it")
        for dir in ["a", "r"] {
            #expect(
                try await eventually(within: .seconds(30)) {
                    let status = try await cli.ok(["status", "--dir", cli.path(dir)])
                    return status.contains("written unsigned after signed writes were required")
                },
                "\(dir)'s status shows the refusal"
            )
        }
        #expect(try await cli.waitForConvergence(all) != nil)
        // The stranger's run was whole and signed by the key its writer names: a refused it for
        // its key alone.
        #expect(a.logText.contains("its key has no certificate from the cluster's authority"), "\(a.logText)")
        for dir in ["r", "a", "b"] {
            #expect(try await value(dir) == before, "\(dir) shows the value from before the forged writes")
            let history = try await cli.ok(["history", "--dir", cli.path(dir), "t", "--all"])
            #expect(history.contains("written unsigned after signed writes were required"), "\(dir): \(history)")
        }
        // Honest writes still flow, signed.
        try await cli.ok(["set", "--dir", cli.path("b"), "u", "n=2"])
        #expect(try await cli.waitForConvergence(all) != nil)
        #expect(
            try JSON(parsing: try await cli.ok(["get", "--dir", cli.path("a"), "u", "--json"]))["fields"]?["n"]
                == .integer(2)
        )
        #expect(r.isRunning && r1.isRunning && a.isRunning && b.isRunning)
    }
}
