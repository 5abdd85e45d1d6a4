import Foundation
import LansyncJSON
import LansyncTestSupport
import Testing

/// Two relays share the authority through a real PostgreSQL server (`lansync relay
/// --authority`, issue 34): one settles at a time, each conflict is settled once, and when the
/// one settling dies (kill -9) the other takes over.
@Suite(.serialized) struct SharedAuthorityTests {
    /// The lease the relays are given, in seconds: short, so the test is quick, and long enough
    /// that a loaded machine does not stall a renewal past it.
    static let lease = 5
    /// How long the tests wait for the replicas to agree: alone this takes seconds, but CI runs
    /// them beside the heaviest suites, where a first convergence once took longer than 30 s.
    static let converged = Duration.seconds(120)

    @Test func theOtherRelayTakesOverSettlingAndEveryConflictIsSettledOnce() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-shared")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "r2", "a", "b"])
        let p = freePorts(4)
        let shared = ["--authority", server.uri, "--lease", "\(Self.lease)"]
        // first-seen: two relays on their own could each pick the value that reached them first.
        let r1 = try await cli.relay(
            port: p[0],
            settle: "first-seen",
            name: "r1",
            extra: shared + ["--peer", "127.0.0.1:\(p[1])"]
        )
        #expect(await r1.logContains("this relay holds the lease (epoch 1"), "\(r1.logText)\n\(server.log)")
        let r2 = try await cli.relay(
            port: p[1],
            settle: "first-seen",
            name: "r2",
            extra: shared + ["--peer", "127.0.0.1:\(p[0])"]
        )
        defer { r2.stop() }
        #expect(await r2.logContains("holds the lease (epoch 1): this relay leaves conflicts to it"), "\(r2.logText)")
        // Each relay's status says where it stands: r1 settles, r2 follows r1.
        #expect(try await Self.standing(cli, "r1") == ["holding", "1", "", ""])
        let following = try await Self.standing(cli, "r2")
        #expect(following.prefix(2) == ["following", "1"] && following[2].hasPrefix("r1 "), "\(following)")
        #expect(try await cli.ok(["status", "--dir", cli.path("r1")]).contains("settling holds the lease (epoch 1)"))

        // A conflict made apart, then both nodes on the relays.
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=base"])
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=from A"])
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "title=from B"])
        let relays = [p[0], p[1]]
        let a = try await cli.node("a", port: p[2], relays: relays)
        var b = try await cli.node("b", port: p[3], relays: relays)
        defer { a.stop() }
        let everyone = ["r1", "r2", "a", "b"].map(cli.path)
        #expect(
            try await cli.waitForConvergence(everyone, timeout: Self.converged) != nil,
            "\(r1.logText)\n\(r2.logText)\n\(a.logText)\n\(b.logText)"
        )
        let first = try await Self.settledEverywhere(cli, everyone, item: "t1")

        // The relay settling dies; a second conflict comes in meanwhile, through the other relay.
        r1.kill9()
        let killed = ContinuousClock.now
        #expect(b.stop() == 0)
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "note=from A"])
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "note=from B"])
        b = try await cli.node("b", port: p[3], relays: relays)
        defer { b.stop() }
        #expect(
            await r2.logContains("this relay holds the lease (epoch", within: Double(2 * Self.lease)),
            "the other relay took over within twice the lease: \(r2.logText)"
        )
        let tookOver = ContinuousClock.now - killed
        let holding = try await Self.standing(cli, "r2")
        #expect(holding[0] == "holding" && (Int(holding[1]) ?? 0) >= 2, "a new holder, a higher epoch: \(holding)")
        let survivors = ["r2", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(survivors, timeout: Self.converged) != nil, "\(r2.logText)")
        let now = try await Self.settledEverywhere(cli, survivors, item: "t1")
        #expect(now?["title"] == first?["title"], "the first settlement stands")
        #expect(now?["note"] != nil)
        // Once per conflict in the ledger: the title by the first relay's epoch or an earlier one
        // (a loaded machine may have moved the lease before the kill), the note by the second.
        let ledger = try server.sql(
            "SELECT field, epoch, split_part(holder, ' ', 1) FROM lansync_settlement ORDER BY field"
        )
        #expect(ledger.count == 2 && ledger[0].hasPrefix("note|") && ledger[0].hasSuffix("|r2"), "\(ledger)")
        #expect(ledger.count == 2 && ledger[1].hasPrefix("title|"), "\(ledger)")
        print("relay-shared: r2 took over settling \(tookOver) after r1 was killed (lease \(Self.lease) s)")
    }

    /// PostgreSQL stops (as a crash would): the relay says so, keeps carrying changes, and leaves
    /// a new conflict open (visible); PostgreSQL comes back and the relay, by itself, reconnects
    /// and settles it.
    @Test func withoutPostgreSQLRelaysCarryChangesAndSettleOnceItIsBack() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("relay-shared-db")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        let p = freePorts(3)
        let r1 = try await cli.relay(
            port: p[0],
            name: "r1",
            extra: ["--authority", server.uri, "--lease", "\(Self.lease)", "--collect-interval", "1"]
        )
        defer { r1.stop() }
        #expect(await r1.logContains("this relay holds the lease (epoch 1"), "\(r1.logText)")
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=base"])
        let a = try await cli.node("a", port: p[1], relays: [p[0]])
        var b = try await cli.node("b", port: p[2], relays: [p[0]])
        defer { a.stop() }
        #expect(try await cli.waitForConvergence(["r1", "a", "b"].map(cli.path), timeout: Self.converged) != nil)

        try server.stopServer()
        #expect(await r1.logContains("cannot be reached", within: Double(2 * Self.lease)), "\(r1.logText)")
        let down = try await Self.standing(cli, "r1")
        #expect(down[0] == "unreachable" && !down[3].isEmpty, "\(down)")
        // Syncing goes on without the database.
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t2", "text=while the database was down"])
        // A conflict made apart stays open (and visible) meanwhile.
        #expect(b.stop() == 0)
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=from A"])
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "title=from B"])
        b = try await cli.node("b", port: p[2], relays: [p[0]])
        defer { b.stop() }
        let everyone = ["r1", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(everyone, timeout: Self.converged) != nil)
        #expect(try await cli.ok(["get", "--dir", cli.path("b"), "t2", "--json"]).contains("while the database"))
        let open = try await cli.ok(["conflicts", "--dir", cli.path("b"), "--json"])
        #expect(open.contains("from A") && open.contains("from B"), "\(open)")

        try server.start()
        // Its second "holds" line: it took the lease back.
        let again = await eventually(within: .seconds(3 * Self.lease)) {
            r1.logText.components(separatedBy: "this relay holds the lease (epoch").count > 2
        }
        #expect(again, "\(r1.logText)")
        #expect(try await Self.standing(cli, "r1").first == "holding")
        let settled = try await eventually(within: .seconds(30)) {
            let left = try await cli.ok(["conflicts", "--dir", cli.path("a"), "--json"])
            return left.trimmingCharacters(in: .whitespacesAndNewlines) == "[]"
        }
        #expect(settled, "\(r1.logText)")
        #expect(try await cli.waitForConvergence(everyone, timeout: Self.converged) != nil)
        _ = try await Self.settledEverywhere(cli, everyone, item: "t1")

        // A settlement older than a silent member may stay away (90 days and a day's margin by
        // default) is forgotten by the holder's next collection round.
        #expect(try server.sql("SELECT count(*) FROM lansync_settlement") == ["1"])
        _ = try server.sql("UPDATE lansync_settlement SET settled_at = now() - interval '92 days'")
        #expect(await r1.logContains("forgot 1 settlement(s) of the shared authority", within: 60), "\(r1.logText)")
        #expect(try server.sql("SELECT count(*) FROM lansync_settlement") == ["0"])
    }

    /// A running relay's `status --json` `authority`: standing, epoch, holder, reason ("" for null).
    static func standing(_ cli: CLI, _ relay: String) async throws -> [String] {
        guard let authority = try await cli.status(cli.path(relay))["authority"], authority != .null else {
            return ["none"]
        }
        return ["standing", "epoch", "holder", "reason"].map { key in
            switch authority[key] {
            case .string(let text)?: text
            case .integer(let n)?: String(n)
            default: ""
            }
        }
    }

    /// Every replica shows the same fields of `item` and no open conflict; returns the fields.
    static func settledEverywhere(_ cli: CLI, _ dirs: [String], item: String) async throws -> JSON? {
        var seen: JSON?
        for dir in dirs {
            let fields = try JSON(parsing: try await cli.ok(["get", "--dir", dir, item, "--json"]))["fields"]
            if let seen { #expect(fields == seen, "\(dir)") }
            seen = fields
            let open = try await cli.ok(["conflicts", "--dir", dir, "--json"]).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            #expect(open == "[]", "\(dir): \(open)")
        }
        return seen
    }
}
