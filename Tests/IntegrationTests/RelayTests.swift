import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
import Testing

/// The relay (issue 6), with real processes on loopback.
@Suite(.serialized) struct RelayTests {
    /// Two groups whose members only know each other (and the relay) converge through it.
    @Test func groupsThatNeverMeetConvergeThroughTheRelay() async throws {
        let cli = CLI("relay-groups")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a1", "a2", "b1", "b2"])
        for name in ["a1", "a2", "b1", "b2"] {
            try await cli.ok(["add", "--dir", cli.path(name), "--id", "from-\(name)", "v=1"])
        }
        let p = freePorts(5)
        let r = try await cli.relay(port: p[0])
        let nodes = await [
            try cli.node("a1", port: p[1], relay: p[0], peers: [p[2]]),
            try cli.node("a2", port: p[2], relay: p[0], peers: [p[1]]),
            try cli.node("b1", port: p[3], relay: p[0], peers: [p[4]]),
            try cli.node("b2", port: p[4], relay: p[0], peers: [p[3]]),
        ]
        let dirs = ["r", "a1", "a2", "b1", "b2"].map(cli.path)
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(60)) != nil, "\(r.logText)")
        let list = try await cli.ok(["list", "--dir", cli.path("b2"), "--json"])
        #expect(list.contains("from-a1") && list.contains("from-a2"))
        // A later edit in one group still crosses over (the relay is handed changes periodically).
        try await cli.ok(["set", "--dir", cli.path("a1"), "from-a1", "v=2"])
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(60)) != nil)
        #expect(try await cli.ok(["get", "--dir", cli.path("b1"), "from-a1", "--json"]).contains(#""v":2"#))
        for n in nodes + [r] { #expect(n.stop() == 0) }
    }

    /// Nodes given two relays use the first; when it dies (kill -9) each fails over to the
    /// second within seconds, says so in its log and status, and edits keep crossing between
    /// nodes that meet only through a relay.
    @Test func nodesFailOverToTheNextRelay() async throws {
        let cli = CLI("relay-failover")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "r2", "a", "b"])
        let p = freePorts(4)
        let r = try await cli.relay(port: p[0])
        let r2 = try await cli.relay(port: p[1], name: "r2")
        defer { r2.stop() }
        let a = try await cli.node("a", port: p[2], relays: [p[0], p[1]])
        let b = try await cli.node("b", port: p[3], relays: [p[0], p[1]])
        defer {
            a.stop()
            b.stop()
        }
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "note", "text=before"])
        #expect(try await cli.waitForConvergence(["r", "a", "b"].map(cli.path), timeout: .seconds(30)) != nil)
        let before = try await cli.status(cli.path("a"))
        #expect(before["relays"]?["current"] == .string("127.0.0.1:\(p[0])"), "\(before.text)")
        #expect(before["relays"]?["failovers"] == .integer(0))
        r.kill9()
        let killed = ContinuousClock.now
        _ = await a.logContains("failing over to 127.0.0.1:\(p[1])")
        print("relay-failover: a failed over \(ContinuousClock.now - killed) after the first relay was killed")
        try await cli.ok(["set", "--dir", cli.path("a"), "note", "text=after the first relay died"])
        #expect(
            try await cli.waitForConvergence(["r2", "a", "b"].map(cli.path), timeout: .seconds(30)) != nil,
            "\(a.logText)"
        )
        #expect(try await cli.ok(["get", "--dir", cli.path("b"), "note", "--json"]).contains("after the first relay"))
        for (node, name) in [(a, "a"), (b, "b")] {
            #expect(await node.logContains("relay 127.0.0.1:\(p[0]) failed", "failing over to 127.0.0.1:\(p[1])"))
            let status = try await cli.status(cli.path(name))
            #expect(status["relays"]?["current"] == .string("127.0.0.1:\(p[1])"), "\(status.text)")
            #expect(status["relays"]?["last_failover"]?["from"] == .string("127.0.0.1:\(p[0])"))
            #expect(status["relays"]?["failovers"] == .integer(1), "once, and no flapping after: \(node.logText)")
            let text = try await cli.ok(["status", "--dir", cli.path(name)])
            #expect(text.contains("relay    127.0.0.1:\(p[1]) (2 of 2), connected; failed over"), "\(text)")
        }
    }

    /// A edits and stops; C starts only afterwards and gets A's edit from the relay.
    @Test func storeAndForward() async throws {
        let cli = CLI("relay-forward")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "c"])
        let p = freePorts(3)
        let r = try await cli.relay(port: p[0])
        let a = try await cli.node("a", port: p[1], relay: p[0])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "note", "text=left for C"])
        #expect(try await cli.waitForConvergence([cli.path("r"), cli.path("a")]) != nil)
        // A's status: every change of A is on the relay; the relay is A's path. (A learns that the
        // relay holds them from the relay's answer, which may come after the digests match.)
        var status = JSON.null
        _ = try await eventually {
            status = try await cli.status(cli.path("a"))
            return status["changes"]?["synced"] == .integer(2)
                && (status["changes"]?["syncing"] == .integer(0) || status["changes"]?["dirty"] == .integer(0))
        }
        #expect(status["changes"]?["synced"] == .integer(2), "\(status.text)")
        #expect(status["changes"]?["syncing"] == .integer(0) || status["changes"]?["dirty"] == .integer(0))
        guard case .array(let peers)? = status["peers"] else {
            Issue.record("status has no peers array: \(status)")
            return
        }
        #expect(peers.contains { $0["path"] == .string("relay") })
        #expect(a.stop() == 0)
        // With the relay down, a new edit waits (DIRTY).
        r.stop()
        try await cli.ok(["set", "--dir", cli.path("a"), "note", "text=changed while the relay is away"])
        let offline = try await cli.status(cli.path("a"))
        #expect(offline["changes"]?["dirty"] == .integer(1), "\(offline.text)")
        let r2 = try await cli.relay(port: p[0])
        let c = try await cli.node("c", port: p[2], relay: p[0])
        #expect(try await cli.waitForConvergence([cli.path("r"), cli.path("c")]) != nil)
        #expect(try await cli.ok(["get", "--dir", cli.path("c"), "note", "--json"]).contains("left for C"))
        c.stop()
        r2.stop()
    }

    /// Issue 63: nodes given only the relay meet each other directly through the addresses it
    /// passes on, and keep their session with the relay all the same. So an edit made on a
    /// while c is off reaches the relay before a goes away, and c, started after, gets it from
    /// the relay alone. With three relays given and the first killed, the same through
    /// the one failed over to. (Before: both relay sessions ended within 0.4 s of the direct
    /// meeting, the next hand-over came 25-30 s later, and c never got the edit.)
    @Test(arguments: [1, 3])
    func theRelayIsKeptWhileNodesMeetDirectly(relays count: Int) async throws {
        let cli = CLI("relay-kept-\(count)")
        defer { cli.cleanUp() }
        let relayNames = (1...count).map { "r\($0)" }
        try await cli.cluster(relayNames + ["a", "c"])
        let p = freePorts(count + 2)
        var relays: [NodeProcess] = []
        for (i, name) in relayNames.enumerated() {
            let others = p[0..<count].filter { $0 != p[i] }.flatMap { ["--peer", "127.0.0.1:\($0)"] }
            relays.append(try await cli.relay(port: p[i], name: name, extra: others))
        }
        defer { for relay in relays { relay.stop() } }
        // As a user starts them: the relays only, gossip on, and (for the view) a bounded view
        // from the first member on, which must not count or prune the relay.
        let given = p[0..<count].flatMap { ["--relay", "127.0.0.1:\($0)"] } + ["--full-mesh-up-to", "1"]
        let (aPort, cPort) = (p[count], p[count + 1])
        let a = try await NodeProcess(dir: cli.path("a"), port: aPort, extra: given)
        var c = try await NodeProcess(dir: cli.path("c"), port: cPort, extra: given)
        defer {
            a.stop()
            c.stop()
        }
        func connected(_ dir: String, to name: String) async throws -> Bool {
            guard case .array(let peers)? = try await cli.status(dir)["peers"] else { return false }
            return peers.contains { $0["name"] == .string(name) && $0["connected"] == .bool(true) }
        }
        func relayConnected(_ dir: String) async throws -> Bool {
            try await cli.status(dir)["relays"]?["connected"] == .bool(true)
        }
        #expect(
            try await eventually(within: .seconds(30)) {
                let aSeesC = try await connected(cli.path("a"), to: "c")
                let cSeesA = try await connected(cli.path("c"), to: "a")
                return aSeesC && cSeesA
            },
            "a and c meet directly through the addresses the relay passes on: \(a.logText)"
        )
        if count > 1 {
            relays[0].kill9()
            #expect(await a.logContains("failing over to 127.0.0.1:\(p[1])", within: 20), "\(a.logText)")
        }
        // Kept: for five seconds after meeting directly, a and c each have their relay session.
        for _ in 0..<10 {
            for dir in ["a", "c"].map(cli.path) {
                #expect(try await eventually(within: .seconds(5)) { try await relayConnected(dir) }, "\(dir)")
            }
            // A sleep: what is checked is that the relay session lasts five seconds past the direct
            // meeting (it used to end within 0.4 s of it); time passing is the test, no event marks it.
            try await Task.sleep(for: .milliseconds(500))
        }
        for dir in ["a", "c"].map(cli.path) {
            let status = try await cli.status(dir)
            #expect(status["relays"]?["connected"] == .bool(true), "\(status.text)")
            #expect(status["relays"]?["problem"] == .null, "\(status.text)")
        }
        #expect(c.stop() == 0)
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "left", "text=before a goes away"])
        // a goes away once its edit is on the relay it syncs with (the one it failed over to, with
        // three): on the relay, through the session kept beside the direct one.
        let current = cli.path(relayNames[count > 1 ? 1 : 0])
        let edited = ContinuousClock.now
        _ = try await eventually {
            try await cli.run(["get", "--dir", current, "left", "--json"]).stdout.contains("before a goes away")
        }
        print("relay-kept-\(count): a's edit was on the relay \(ContinuousClock.now - edited) after it was made")
        #expect(a.stop() == 0)
        c = try await NodeProcess(dir: cli.path("c"), port: cPort, extra: given)
        #expect(
            try await eventually(within: .seconds(30)) {
                try await cli.run(["get", "--dir", cli.path("c"), "left", "--json"]).stdout.contains(
                    "before a goes away"
                )
            },
            "c got a's edit from the relay alone: \(c.logText)"
        )
        // Every relay gone: status and doctor say the node is not connected to its relay, and why.
        for relay in relays { relay.stop() }
        #expect(
            try await eventually(within: .seconds(20)) { try await !relayConnected(cli.path("c")) },
            "\(c.logText)"
        )
        let text = try await cli.ok(["status", "--dir", cli.path("c")])
        #expect(text.contains("NOT CONNECTED since"), "\(text)")
        let doctor = try await cli.run(["doctor", "--dir", cli.path("c"), "--json"], environment: DoctorTests.noBus)
        let finding = try DoctorTests.findings(doctor.stdout, topic: "relay")
        #expect(finding.first?["verdict"] == .string("problem"), "\(doctor.stdout)")
        #expect(DoctorTests.says(finding.first ?? .null).contains("not connected to its relay"), "\(doctor.stdout)")
    }

    /// A conflict made on two disconnected nodes is settled by the relay: one value everywhere,
    /// no open conflict, the loser in history. `--settle first-seen` keeps what arrived first.
    @Test(arguments: ["latest", "first-seen"])
    func theRelaySettlesConflicts(policy: String) async throws {
        let cli = CLI("relay-settle")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=base"])
        let p = freePorts(3)
        let r = try await cli.relay(port: p[0], settle: policy)
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:\(p[0])"])
        // Apart: A edits first (and reaches the relay first), B edits later.
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=from A"])
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        // B's edit must be the later one.
        await waitForTheNextMillisecond()
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "title=from B"])
        let a = try await cli.node("a", port: p[1], relay: p[0])
        let b = try await cli.node("b", port: p[2], relay: p[0])
        let dirs = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(30)) != nil)
        let expected = policy == "latest" ? "from B" : "from A"
        for dir in dirs {
            #expect(
                try await cli.ok(["get", "--dir", dir, "t1", "--json"]).contains(#""title":"\#(expected)""#),
                "\(policy) on \(dir)"
            )
            #expect(
                try await cli.ok(["conflicts", "--dir", dir, "--json"]).trimmingCharacters(in: .whitespacesAndNewlines)
                    == "[]"
            )
        }
        let history = try await cli.ok(["history", "--dir", cli.path("b"), "t1", "title", "--json"])
        #expect(history.contains(#""set":"from A""#) && history.contains(#""set":"from B""#))
        a.stop()
        b.stop()
        r.stop()
    }

    /// A field removed on one node and set on another, apart, is a conflict the relay settles like
    /// any other: `latest` keeps the later set; `first-seen` keeps the removal, which arrived first,
    /// and the field is gone everywhere.
    @Test(arguments: ["latest", "first-seen"])
    func theRelaySettlesASetAgainstARemoval(policy: String) async throws {
        let cli = CLI("relay-unset")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=base", "n=1"])
        let p = freePorts(3)
        let r = try await cli.relay(port: p[0], settle: policy)
        defer { r.stop() }
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:\(p[0])"])
        try await cli.ok(["unset", "--dir", cli.path("a"), "t1", "title"])
        try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(p[0])"])
        // The set is the later edit.
        await waitForTheNextMillisecond()
        try await cli.ok(["set", "--dir", cli.path("b"), "t1", "title=from B"])
        let a = try await cli.node("a", port: p[1], relay: p[0])
        let b = try await cli.node("b", port: p[2], relay: p[0])
        defer {
            a.stop()
            b.stop()
        }
        let dirs = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(30)) != nil)
        for dir in dirs {
            let item = try JSON(parsing: try await cli.ok(["get", "--dir", dir, "t1", "--json"]))
            let expected: JSON? = policy == "latest" ? .string("from B") : nil
            #expect(item["fields"]?["title"] == expected, "\(policy) on \(dir): \(item)")
            #expect(item["fields"]?["n"] == .integer(1))
            #expect(
                try await cli.ok(["conflicts", "--dir", dir, "--json"]).trimmingCharacters(in: .whitespacesAndNewlines)
                    == "[]"
            )
        }
    }

    /// The relay killed with SIGKILL during heavy sync restarts, and everyone converges.
    @Test func aKilledRelayRestartsAndEveryoneConverges() async throws {
        let cli = CLI("relay-kill")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b"])
        let input = (0..<3000).map { #"{"id":"i\#($0)","fields":{"n":\#($0),"text":"row \#($0)"}}"# }.joined(
            separator: "\n"
        )
        try await cli.ok(["import", "--dir", cli.path("a")], input: input)
        let p = freePorts(3)
        var r = try await cli.relay(port: p[0])
        let a = try await cli.node("a", port: p[1], relay: p[0])
        let rStore = try ReplicaStore.open(path: cli.path("r/replica.sqlite"))
        // Killed once it holds the first items: mid-stream.
        _ = try await eventually(every: .milliseconds(5)) { try rStore.counts().items > 0 }
        r.kill9()
        print("relay killed holding \(try rStore.counts().items) of 3000 items")
        #expect(try rStore.integrityCheck() == "ok")
        r = try await cli.relay(port: p[0])
        let b = try await cli.node("b", port: p[2], relay: p[0])
        #expect(try await cli.waitForConvergence(["r", "a", "b"].map(cli.path), timeout: .seconds(90)) != nil)
        a.stop()
        b.stop()
        r.stop()
    }

    /// An over-limit change is refused and overruled by the relay, shown in status on the node
    /// that wrote it (and kept in its history), while its other changes flow.
    @Test func anOverLimitChangeIsRejectedAndOthersFlow() async throws {
        let cli = CLI("relay-limits")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b"])
        let p = freePorts(3)
        let r = try await NodeProcess(
            dir: cli.path("r"),
            port: p[0],
            arguments: ["--listen", "127.0.0.1:\(p[0])", "--max-value-bytes", "1000"],
            command: "relay"
        )
        let a = try await cli.node("a", port: p[1], relay: p[0])
        let b = try await cli.node("b", port: p[2], relay: p[0])
        let big = String(repeating: "x", count: 3000)
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "small=1", "big=\(big)"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t2", "ok=yes"])
        let dirs = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(30)) != nil, "\(r.logText)")
        for dir in dirs {
            let t1 = try JSON(parsing: try await cli.ok(["get", "--dir", dir, "t1", "--json"]))
            #expect(t1["fields"]?["big"] == .null && t1["fields"]?["small"] == .integer(1), "\(dir): \(t1.text)")
            #expect(try await cli.ok(["get", "--dir", dir, "t2", "--json"]).contains(#""ok":"yes""#))
        }
        let status = try await cli.status(cli.path("a"))
        guard case .array(let rejected)? = status["rejected"], rejected.count == 1 else {
            Issue.record("no rejection in \(status.text)")
            return
        }
        #expect(rejected[0]["id"] == .string("t1") && rejected[0]["field"] == .string("big"))
        guard case .string(let reason)? = rejected[0]["reason"] else {
            Issue.record("rejection without a reason: \(rejected[0])")
            return
        }
        #expect(reason.contains("over the relay's limit of 1000"))
        #expect(try await cli.ok(["status", "--dir", cli.path("a")]).contains("REJECTED"))
        // Not lost silently: the refused value stays in the writer's history.
        #expect(try await cli.ok(["history", "--dir", cli.path("a"), "t1", "big", "--json"]).contains(big))
        #expect(try await cli.status(cli.path("b"))["rejected"] == .array([]))
        a.stop()
        b.stop()
        r.stop()
    }

    /// The relay serves a bounded number of nodes at once: one more is told it is busy (in its
    /// log), the others keep syncing, and it gets in once a place frees up. (Told busy, it still
    /// heard from the relay's hello where the others are, and meets them directly meanwhile.)
    @Test func theRelayBoundsItsSessions() async throws {
        let cli = CLI("relay-busy")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b", "c"])
        let p = freePorts(4)
        let r = try await NodeProcess(
            dir: cli.path("r"),
            port: p[0],
            arguments: ["--listen", "127.0.0.1:\(p[0])", "--max-sessions", "2"],
            command: "relay"
        )
        let a = try await cli.node("a", port: p[1], relay: p[0])
        let b = try await cli.node("b", port: p[2], relay: p[0])
        #expect(try await cli.waitForConvergence(["r", "a", "b"].map(cli.path)) != nil)
        let c = try await cli.node("c", port: p[3], relay: p[0])
        try await cli.ok(["add", "--dir", cli.path("c"), "--id", "from-c", "v=1"])
        #expect(await c.logContains("busy"), "\(c.logText)")
        // The admitted nodes keep syncing.
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "from-a", "v=1"])
        #expect(try await cli.waitForConvergence(["r", "a", "b"].map(cli.path)) != nil)
        #expect(r.isRunning)
        // A place frees up: C gets in and everyone converges.
        a.stop()
        #expect(try await cli.waitForConvergence(["r", "b", "c"].map(cli.path), timeout: .seconds(90)) != nil)
        #expect(try await cli.ok(["list", "--dir", cli.path("b"), "--json"]).contains("from-c"))
        b.stop()
        c.stop()
        r.stop()
    }
}
