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
        let refused = try await cli.run(["invite", "--dir", cli.path("r1b")])
        #expect(refused.status != 0 && refused.stderr.contains("replica is in PostgreSQL"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
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
}
