import Foundation
import LansyncJSON
import LansyncTestSupport
import Testing

/// Two relay processes on one replica in a real PostgreSQL server (`lansync relay --store`,
/// issue 34), each a copy of one relay's data directory: a change a node gives one reaches a node
/// that meets only the other, and when the first is killed (kill -9) the node fails over to the
/// second and goes on syncing.
@Suite(.serialized) struct RelayOnPostgresTests {
    /// How long the test waits for the replicas to agree (beside the heaviest suites on CI).
    static let converged = Duration.seconds(120)

    @Test func twoRelayProcessesShareOneReplicaAndANodeFailsOverBetweenThem() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-store")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        // The second relay process runs a copy of the first's data directory: one relay, to the
        // cluster, at two addresses.
        try FileManager.default.copyItem(atPath: cli.path("r1"), toPath: cli.path("r1b"))
        let p = freePorts(4)
        let store = ["--store", server.uri, "--authority", server.uri]
        let r1 = try await cli.relay(port: p[0], name: "r1", extra: store)
        let r1b = try await cli.relay(port: p[1], name: "r1b", extra: store)
        defer { r1b.stop() }
        let made = [r1, r1b].filter { $0.logText.contains("made the relay's replica in PostgreSQL") }.count
        #expect(made == 1, "one process made the replica, the other opened it: \(r1.logText)\n\(r1b.logText)")
        let schemas = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'")
        #expect(schemas.count == 1, "\(schemas)")

        // a meets r1 (r1b only if r1 fails), b meets r1b alone: a change goes a → r1 →
        // PostgreSQL → r1b → b.
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=through the relays"])
        let a = try await cli.node("a", port: p[2], relays: [p[0], p[1]])
        defer { a.stop() }
        let b = try await cli.node("b", port: p[3], relays: [p[1]])
        defer { b.stop() }
        let everyone = ["r1", "r1b", "a", "b"].map(cli.path)
        let took = try await cli.waitForConvergence(everyone, timeout: Self.converged)
        #expect(took != nil, "\(r1.logText)\n\(r1b.logText)\n\(a.logText)\n\(b.logText)")
        print(
            "relay-store: a's item reached b through two relay processes and PostgreSQL; converged \(took.map { "\($0)" } ?? "never")"
        )
        #expect(try await cli.ok(["get", "--dir", cli.path("b"), "t1", "--json"]).contains("through the relays"))
        // The directory's SQLite file is not the replica: commands refuse it, in one line, and
        // status asks the running relay.
        for command in [["invite"], ["repair"]] {
            let refused = try await cli.run(command + ["--dir", cli.path("r1b")])
            #expect(refused.status != 0 && refused.stderr.contains("replica is in PostgreSQL"), "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
        let status = try await cli.status(cli.path("r1b"))
        #expect(status["running"] == .bool(true) && status["authority"] != .null, "\(status)")
        let rows = try server.sql("SELECT count(*) FROM \(schemas.first ?? "none").item")
        #expect(rows == ["1"], "the replica in PostgreSQL holds the item: \(rows)")

        // The process a syncs through dies; a fails over to the other, and its edits still reach b.
        r1.kill9()
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "note=after r1 died"])
        let survivors = ["r1b", "a", "b"].map(cli.path)
        #expect(
            try await cli.waitForConvergence(survivors, timeout: Self.converged) != nil,
            "\(r1b.logText)\n\(a.logText)\n\(b.logText)"
        )
        #expect(try await cli.ok(["get", "--dir", cli.path("b"), "t1", "--json"]).contains("after r1 died"))
        #expect(
            a.logText.contains("failing over to 127.0.0.1:\(p[1])"),
            "a says it went to the other relay: \(a.logText)"
        )
    }

    /// Conflicts through two relay processes on one replica, sharing the authority in the same
    /// database: a conflict is settled once, and when the process holding the lease dies
    /// (kill -9) the other takes it over within twice the lease and settles the next one; every
    /// node ends with the same values and no conflict open, one ledger row per conflict.
    @Test func theProcessHoldingTheLeaseDiesAndTheOtherSettles() async throws {
        let lease = SharedAuthorityTests.lease
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-store-settle")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        try FileManager.default.copyItem(atPath: cli.path("r1"), toPath: cli.path("r1b"))
        let p = freePorts(4)
        let shared = ["--store", server.uri, "--authority", server.uri, "--lease", "\(lease)"]
        let r1 = try await cli.relay(port: p[0], settle: "first-seen", name: "r1", extra: shared)
        #expect(await r1.logContains("this relay holds the lease (epoch 1"), "\(r1.logText)\n\(server.log)")
        let r1b = try await cli.relay(port: p[1], settle: "first-seen", name: "r1b", extra: shared)
        defer { r1b.stop() }
        // A conflict made apart: both nodes take the item, then edit it offline.
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=base"])
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:\(p[1])"])
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=from A"])
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "title=from B"])
        let a = try await cli.node("a", port: p[2], relays: [p[0], p[1]])
        defer { a.stop() }
        var b = try await cli.node("b", port: p[3], relays: [p[1]])
        let nodes = ["a", "b"].map(cli.path)
        let everyone = ["r1", "r1b", "a", "b"].map(cli.path)
        #expect(
            try await cli.waitForConvergence(everyone, timeout: Self.converged) != nil,
            "\(r1.logText)\n\(r1b.logText)\n\(a.logText)\n\(b.logText)"
        )
        #expect(try await Self.settled(cli, nodes, item: "t1"))
        let first = try await SharedAuthorityTests.settledEverywhere(cli, nodes, item: "t1")

        // The process holding the lease dies; a second conflict comes in meanwhile.
        r1.kill9()
        #expect(b.stop() == 0)
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "note=from A"])
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "note=from B"])
        b = try await cli.node("b", port: p[3], relays: [p[1]])
        defer { b.stop() }
        #expect(
            await r1b.logContains("this relay holds the lease (epoch", within: Double(2 * lease)),
            "the other process took over within twice the lease: \(r1b.logText)"
        )
        let survivors = ["r1b", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(survivors, timeout: Self.converged) != nil, "\(r1b.logText)")
        #expect(try await Self.settled(cli, nodes, item: "t1"))
        let now = try await SharedAuthorityTests.settledEverywhere(cli, nodes, item: "t1")
        #expect(now?["title"] == first?["title"], "the first settlement stands")
        #expect(now?["note"] != nil)
        let ledger = try server.sql("SELECT field FROM lansync_settlement ORDER BY field")
        #expect(ledger == ["note", "title"], "one ledger row per conflict: \(ledger)")
    }

    /// Waits until no node shows a conflict open (a settlement reaches them after convergence
    /// may have been seen); false if one stays open.
    static func settled(_ cli: CLI, _ dirs: [String], item: String) async throws -> Bool {
        for _ in 0..<600 {
            var open = false
            for dir in dirs {
                let text = try await cli.ok(["conflicts", "--dir", dir, "--json"])
                if text.trimmingCharacters(in: .whitespacesAndNewlines) != "[]" { open = true }
            }
            if !open { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
