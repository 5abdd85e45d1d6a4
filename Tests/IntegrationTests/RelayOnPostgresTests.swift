import Foundation
import LansyncJSON
import LansyncTestSupport
import Synchronization
import Testing

/// Two relay processes on one replica in a real PostgreSQL server (`lansync relay --store`,
/// issue 34), each a copy of one relay's data directory: a change a node gives one reaches a node
/// that meets only the other, and when the first is killed (kill -9) the node fails over to the
/// second and goes on syncing.
@Suite(.serialized) struct RelayOnPostgresTests {
    /// How long the test waits for the replicas to agree: a bound on a hang, beside the heaviest
    /// suites on CI (where one of these tests took 351 s in all).
    static let converged = Duration.seconds(300)

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

    /// Issue 62, defect 4: hellos named `x\0y` made a relay on PostgreSQL fail every save of its
    /// peers (SQLSTATE 22021), and an honest member's report went stale. Now such a name is
    /// refused at the wire (as malformed), nothing of it reaches the server, and an honest
    /// member syncs through the relay meanwhile.
    @Test func aNameWithANulNeverReachesPostgreSQL() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-nul")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "m"])
        let p = freePorts(2)
        let relay = try await cli.relay(
            port: p[0],
            name: "r1",
            extra: ["--store", server.uri, "--authority", server.uri]
        )
        defer { relay.stop() }
        var answers: [String] = []
        for _ in 0..<5 {
            let rogue = try await cli.run(
                [
                    "rogue-member", "--dir", cli.path("m"), "--peer", "127.0.0.1:\(p[0])", "--name", "x\\x00y",
                    // A bound, not a wait: the relay closes after its error. In a loaded CI run
                    // one of five hellos took longer than a second to be answered.
                    "--seconds", "10",
                ],
                binary: CLI.debugBinary
            )
            answers.append(rogue.stdout)
        }
        #expect(answers.allSatisfy { $0.contains("error malformed-message") }, "\(answers)")
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "honest", "v=1"])
        let a = try await cli.node("a", port: p[1], relays: [p[0]])
        defer { a.stop() }
        #expect(try await cli.waitForConvergence(["r1", "a"].map(cli.path), timeout: Self.converged) != nil)
        #expect(relay.isRunning)
        #expect(!relay.logText.contains("22021") && !server.log.contains("invalid byte sequence"), "\(relay.logText)")
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

    /// Four nodes that meet only through two relay processes on one replica, sharing the
    /// authority. The process holding the lease is killed (kill -9) while a node streams it
    /// hundreds of items, and later the other, then holding it, while it settles twenty
    /// conflicts. Every node converges, each conflict is settled once (one ledger row, the same
    /// value everywhere, none open), and each time the survivor took the lease within twice its
    /// length.
    @Test func fourNodesAndTheLeaseHolderKilledMidStreamAndMidSettlement() async throws {
        let lease = SharedAuthorityTests.lease
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-store-four")
        defer { cli.cleanUp() }
        let names = ["a", "b", "c", "d"]
        try await cli.cluster(["r1"] + names)
        try FileManager.default.copyItem(atPath: cli.path("r1"), toPath: cli.path("r1b"))
        let p = freePorts(6)
        let shared = ["--store", server.uri, "--authority", server.uri, "--lease", "\(lease)"]
        var r1 = try await cli.relay(port: p[0], settle: "first-seen", name: "r1", extra: shared)
        #expect(await r1.logContains("this relay holds the lease (epoch 1"), "\(r1.logText)\n\(server.log)")
        let r1b = try await cli.relay(port: p[1], settle: "first-seen", name: "r1b", extra: shared)
        defer { r1b.stop() }
        // a and b go to r1 first, c and d to r1b: every change crosses the shared replica.
        var nodes: [String: NodeProcess] = [:]
        func start(_ name: String) async throws {
            let first = ["a", "b"].contains(name)
            nodes[name] = try await cli.node(
                name,
                port: p[2 + names.firstIndex(of: name)!],
                relays: first ? [p[0], p[1]] : [p[1], p[0]]
            )
        }
        for name in names { try await start(name) }
        defer { for node in nodes.values { node.stop() } }
        func logs() -> String { ([r1, r1b] + nodes.values).map(\.logText).joined(separator: "\n") }
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"

        // 1. a streams 2,000 items to r1, which dies mid-stream. (A relay on PostgreSQL built for
        // debugging once applied some tens of field states a second beside CI's other suites, and
        // 5,000 items took CI past its wait; it now takes batches of 170 items faster than the
        // count's poll, a psql process each, can see them: 600 items were all in at its first
        // answer once in five runs.)
        let count = 2000
        let lines = (0..<count).map {
            #"{"id":"i\#($0)","type":"t","fields":{"n":\#($0),"t":"the text of item \#($0)"}}"#
        }
        try lines.joined(separator: "\n").write(toFile: cli.path("items.jsonl"), atomically: true, encoding: .utf8)
        try await cli.ok(["import", "--dir", cli.path("a"), cli.path("items.jsonl")])
        let held = try await Self.firstCount(server, "SELECT count(*) FROM \(schema).item", within: .seconds(30))
        r1.kill9()
        print("relay-store-four: r1 killed with \(held) of \(count) items in the shared replica")
        #expect(held > 0 && held < count, "r1 died mid-stream: \(held) of \(count) items in the shared replica")
        #expect(
            await r1b.logContains("this relay holds the lease (epoch", within: Double(2 * lease)),
            "r1b took the lease within twice its length: \(r1b.logText)"
        )
        let survivors = (["r1b"] + names).map(cli.path)
        #expect(try await cli.waitForConvergence(survivors, timeout: Self.converged) != nil, "\(logs())")
        let stored = try server.sql("SELECT count(*) FROM \(schema).item")
        #expect(stored == ["\(count)"], "every item is in the shared replica: \(stored)")
        for name in names {
            let last = try await cli.ok(["get", "--dir", cli.path(name), "i\(count - 1)", "--json"])
            #expect(last.contains("the text of item \(count - 1)"), "\(name) holds the last item: \(last)")
        }

        // 2. r1 comes back without the lease; b and d make twenty conflicts apart, and r1b,
        // holding the lease, dies once it has begun settling them.
        r1 = try await cli.relay(port: p[0], settle: "first-seen", name: "r1", extra: shared)
        defer { r1.stop() }
        let conflicts = (0..<20).map { "i\($0)" }
        for name in ["b", "d"] {
            #expect(nodes[name]?.stop() == 0)
            for item in conflicts { try await cli.ok(["set", "--dir", cli.path(name), item, "t=from \(name)"]) }
        }
        try await start("b")
        try await start("d")
        let settled = try await Self.firstCount(server, "SELECT count(*) FROM lansync_settlement", within: .seconds(60))
        r1b.kill9()
        // (Whether it died before the last settlement is up to timing: said, not checked. The
        // checks below hold either way, and the first run here saw 5 of 20.)
        print("relay-store-four: r1b killed with \(settled) of \(conflicts.count) conflicts settled")
        #expect(settled > 0, "r1b had begun settling: \(r1b.logText)")
        #expect(
            await r1.logContains("this relay holds the lease (epoch", within: Double(2 * lease)),
            "r1 took the lease within twice its length: \(r1.logText)"
        )
        let last = (["r1"] + names).map(cli.path)
        #expect(try await cli.waitForConvergence(last, timeout: Self.converged) != nil, "\(logs())")
        let dirs = names.map(cli.path)
        #expect(try await Self.settled(cli, dirs, item: "i0"), "\(logs())")
        #expect(try await cli.waitForConvergence(last, timeout: Self.converged) != nil, "\(logs())")
        for item in conflicts {
            let fields = try await SharedAuthorityTests.settledEverywhere(cli, dirs, item: item)
            #expect(
                fields?["t"] == .string("from b") || fields?["t"] == .string("from d"),
                "\(item): \(String(describing: fields))"
            )
        }
        let ledger = try server.sql(
            "SELECT item, field, count(*) FROM lansync_settlement GROUP BY item, field ORDER BY item"
        )
        #expect(
            ledger.count == conflicts.count && ledger.allSatisfy { $0.hasSuffix("|t|1") },
            "one ledger row per conflict: \(ledger)"
        )
    }

    /// PostgreSQL restarts (an immediate stop, as a crash, then a start) while both nodes edit
    /// through two relay processes: the relays stay up, reconnect by themselves, and the nodes'
    /// sessions resume; every edit made before, during and after reaches the other node.
    @Test func postgresRestartsUnderLoadAndTheRelaysGoOn() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-store-restart")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        try FileManager.default.copyItem(atPath: cli.path("r1"), toPath: cli.path("r1b"))
        let p = freePorts(4)
        let store = ["--store", server.uri, "--authority", server.uri]
        let r1 = try await cli.relay(port: p[0], name: "r1", extra: store)
        defer { r1.stop() }
        let r1b = try await cli.relay(port: p[1], name: "r1b", extra: store)
        defer { r1b.stop() }
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "ta", "n=0"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "tb", "n=0"])
        let a = try await cli.node("a", port: p[2], relays: [p[0]])
        defer { a.stop() }
        let b = try await cli.node("b", port: p[3], relays: [p[1]])
        defer { b.stop() }
        func logs() -> String { [r1, r1b, a, b].map(\.logText).joined(separator: "\n") + "\n" + server.log }
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        // What a relay's change poll says when it cannot read the replica, and once it can again.
        let failed = "could not read the replica's version vector"
        let answers = "the replica answers again"

        // Each node edits its own item, one edit after another (each waits for the last: the
        // commands pace themselves), before, during and after the restart: the load.
        let made = EditCount()
        let editing = Task {
            while !Task.isCancelled {
                let n = made.next()
                _ = try? await cli.run(["set", "--dir", cli.path("a"), "--", "ta", "n=\(n)"])
                _ = try? await cli.run(["set", "--dir", cli.path("b"), "--", "tb", "n=\(n)"])
            }
        }
        // Before: an edit done on each node, and both items in the replica in PostgreSQL (each
        // node's session with its relay is up).
        _ = try await eventually {
            guard made.now >= 2 else { return false }
            return try server.sql("SELECT count(*) FROM \(schema).item") == ["2"]
        }
        try server.stopServer()
        let atStop = made.now
        // During: an edit begun and done while the server is down, and a relay that met the failure.
        _ = await eventually {
            made.now >= atStop + 2 && [r1, r1b].contains { $0.logText.contains(failed) }
        }
        let atStart = made.now
        try server.start()
        // After: an edit begun and done since the start, and every relay that met the failure
        // reading the replica again.
        _ = await eventually {
            made.now >= atStart + 2
                && [r1, r1b].allSatisfy { !$0.logText.contains(failed) || $0.logText.contains(answers) }
        }
        editing.cancel()
        await editing.value
        #expect(atStart > atStop, "the nodes edited while the server was down: \(atStop) then \(atStart)")
        // The relays met the failure (their change poll could not read the replica) and went on.
        let r1Failed = await r1.logContains(failed, within: 1)
        let r1bFailed = await r1b.logContains(failed, within: 1)
        #expect(r1Failed || r1bFailed, "\(logs())")
        try await cli.ok(["set", "--dir", cli.path("a"), "ta", "n=last"])
        try await cli.ok(["set", "--dir", cli.path("b"), "tb", "n=last"])
        #expect(r1.isRunning && r1b.isRunning, "the relays stayed up: \(logs())")
        let everyone = ["r1", "r1b", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(everyone, timeout: Self.converged) != nil, "\(logs())")
        for (dir, item) in [("a", "tb"), ("b", "ta")] {
            let text = try await cli.ok(["get", "--dir", cli.path(dir), item, "--json"])
            #expect(text.contains("\"last\""), "\(dir) holds the other's last edit: \(text)")
        }
        let rows = try server.sql("SELECT item_id FROM \(schema).item ORDER BY item_id")
        #expect(rows == ["ta", "tb"], "the replica in PostgreSQL holds both items: \(rows)")
    }

    /// `query`'s count, asked again until it is above zero or `limit` passed: the moment to kill a
    /// relay that has begun something.
    static func firstCount(_ server: TemporaryPostgres, _ query: String, within limit: Duration) async throws -> Int {
        try await eventually(within: limit, every: .milliseconds(10)) {
            let count = Int(try server.sql(query).first ?? "0") ?? 0
            return count > 0 ? count : nil
        } ?? 0
    }

    /// Waits until no node shows a conflict open (a settlement reaches them after convergence
    /// may have been seen); false if one stays open.
    static func settled(_ cli: CLI, _ dirs: [String], item: String) async throws -> Bool {
        try await eventually(within: .seconds(120), every: .milliseconds(200)) {
            for dir in dirs {
                let text = try await cli.ok(["conflicts", "--dir", dir, "--json"])
                if text.trimmingCharacters(in: .whitespacesAndNewlines) != "[]" { return false }
            }
            return true
        }
    }
}

/// How many edits a test's editing task has begun, read by the test as it goes.
final class EditCount: Sendable {
    private let count = Mutex(0)

    /// The next edit's number.
    func next() -> Int {
        count.withLock { n in
            n += 1
            return n
        }
    }

    var now: Int { count.withLock { $0 } }
}
