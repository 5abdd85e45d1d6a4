// With LansyncNode in this target, `stat` is found through CoreFoundation too.
import CoreFoundation
import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
import Testing

/// Issue 4 with real processes: nodes on loopback with static peers.
@Suite(.serialized) struct NodeSyncTests {
    /// An import on A while B runs reaches B, and B sends none of it back: what a peer streamed
    /// is known to be on that peer (issue 15, "no echo"). A's view of its session with B counts
    /// the field states each way.
    @Test func importedChangesAreNotEchoedBack() async throws {
        let cli = CLI("echo")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0])
        let b = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
        defer {
            _ = b.stop()
            _ = a.stop()
        }
        func sessionWithB() async throws -> (sent: Int64, received: Int64)? {
            guard case .array(let peers)? = try await cli.status(cli.path("a"))["peers"],
                let peer = peers.first(where: { $0["connected"] == .bool(true) }),
                case .integer(let sent)? = peer["sent_updates"], case .integer(let received)? = peer["received_updates"]
            else { return nil }
            return (sent, received)
        }
        let session = try await eventually(within: .seconds(30), every: .milliseconds(50)) {
            try await sessionWithB()
        }
        let before = try #require(session, "A and B never connected")
        let items = 1000
        let input = (0..<items).map { #"{"id":"e\#($0)","fields":{"n":\#($0),"tags":["x"]}}"# }.joined(separator: "\n")
        try await cli.ok(["import", "--dir", cli.path("a")], input: input)
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        // A sleep: B's change poll (every second) gets a chance or two to send anything back;
        // a poll that sends nothing, as it should, leaves no event to wait for.
        try await Task.sleep(for: .seconds(2))
        let after = try #require(try await sessionWithB())
        let sent = after.sent - before.sent
        let received = after.received - before.received
        print("import of \(items) items on A: A sent B \(sent) field states, B sent back \(received)")
        // Each item's three field states (n, tags, _type) once: no batch goes twice.
        #expect(sent == Int64(items * 3))
        #expect(received * 100 <= sent, "B echoed \(received) of the \(sent) field states A sent")
    }

    /// A list edit sends the edit, not the list (protocol 1.2 field deltas): on two real nodes,
    /// adding one element to a list of 2,000, then removing it, each cost A a few hundred bytes
    /// on the wire to B (the whole list is over 30 KB), and B ends with exactly A's list.
    @Test func aListEditSendsOnlyTheEdit() async throws {
        let cli = CLI("listdelta")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let elements = (0..<2000).map { "\"sample \($0)\"" }.joined(separator: ",")
        try await cli.ok(
            ["import", "--dir", cli.path("a")],
            input: #"{"id":"list","type":"t","fields":{"tags":[\#(elements)]}}"#
        )
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0])
        let b = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
        defer {
            _ = b.stop()
            _ = a.stop()
        }
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        /// A's bytes sent to B, once they stopped moving for a second (live push and its ack):
        /// the same figure at two looks a second apart.
        func settledBytesSent() async throws -> Int64 {
            var last: Int64 = -1
            let settled: Int64? = try await eventually(within: .seconds(30), every: .seconds(1)) {
                guard case .array(let peers)? = try await cli.status(cli.path("a"))["peers"],
                    let peer = peers.first(where: { $0["connected"] == .bool(true) }),
                    case .integer(let sent)? = peer["sent_bytes"]
                else { return nil }
                if sent == last { return sent }
                last = sent
                return nil
            }
            if let settled { return settled }
            Issue.record("A's bytes to B never settled")
            return last
        }
        for edit in ["tags+=sample new", "tags-=sample 7"] {
            let before = try await settledBytesSent()
            try await cli.ok(["set", "--dir", cli.path("a"), "list", edit])
            #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
            let sent = try await settledBytesSent() - before
            print("\(edit) on a list of 2,000 elements: A sent B \(sent) bytes")
            // Idle summaries may fall in the window (about 100 bytes each); the list is 30 KB.
            #expect(sent < 1_500, "\(edit) cost \(sent) bytes")
        }
        let onA = try await cli.ok(["export", "--dir", cli.path("a")])
        let onB = try await cli.ok(["export", "--dir", cli.path("b")])
        #expect(onA == onB && onB.contains("sample new") && !onB.contains("\"sample 7\""))
    }

    /// A second node on a port already taken says which address, why, and what to do, in one
    /// line, and the first node is untouched.
    @Test func aTakenPortIsNamedWithWhatToDo() async throws {
        let cli = CLI("port")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let port = freePorts(1)[0]
        let a = try await NodeProcess(dir: cli.path("a"), port: port)
        defer { _ = a.stop() }
        #expect(try await cli.waitForConvergence([cli.path("a")]) != nil)
        let second = try await cli.run(["node", "--dir", cli.path("b"), "--listen", "127.0.0.1:\(port)", "--no-mdns"])
        #expect(second.status == 1)
        let lines = second.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(second.stderr)")
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(port): the port is in use"), "\(second.stderr)")
        #expect(second.stderr.contains("--listen HOST:PORT"))
        #expect(try await cli.status(cli.path("a"))["running"] == .bool(true))
    }

    /// Three nodes with offline edits on each, started in an arbitrary order, converge: same digest,
    /// same `list --json`, and every merge scenario of Docs/MERGE.md holds on all three.
    @Test func threeNodesConvergeFromOfflineEdits() async throws {
        let cli = CLI("three")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b", "c"])
        let dirs = ["a", "b", "c"].map(cli.path)
        let ports = freePorts(3)
        func start(_ i: Int) async throws -> NodeProcess {
            try await NodeProcess(
                dir: dirs[i],
                port: ports[i],
                peers: ports.enumerated().filter { $0.offset != i }.map(\.element)
            )
        }
        // A base every node shares.
        try await cli.ok([
            "add", "--dir", dirs[0], "--id", "t1", "--type", "task", "title=Climb", #"tags=["climbing"]"#,
        ])
        try await cli.ok(["add", "--dir", dirs[0], "--id", "t2", "--type", "task", "title=Old"])
        var nodes = try await (0..<3).asyncMap(start)
        #expect(try await cli.waitForConvergence(dirs) != nil)
        for node in nodes { #expect(node.stop() == 0, "a node stopped by SIGTERM exits 0") }

        // Apart: every node edits offline.
        let a = ["--dir", dirs[0]]
        let b = ["--dir", dirs[1]]
        let c = ["--dir", dirs[2]]
        try await cli.ok(["set"] + a + ["t1", "location=Fontainebleau", "tags+=reading", "title=from A"])
        try await cli.ok(["rm"] + a + ["t2"])
        // B's title must carry a later timestamp than A's (Docs/MERGE.md, scenario 3).
        await waitForTheNextMillisecond()
        try await cli.ok(["set"] + b + ["t1", "title=from B", "tags+=karaoke"])
        try await cli.ok(["set"] + c + ["t2", "note=edited while deleted elsewhere"])
        try await cli.ok(["add"] + c + ["--id", "c1", "made=offline"])

        nodes = try await [2, 0, 1].asyncMap(start)
        let took = try await cli.waitForConvergence(dirs)
        #expect(took != nil, "no convergence: \(nodes.map(\.logText))")
        print("three nodes converged after offline edits in \(took.map { "\($0)" } ?? "-")")
        let lists = try await dirs.asyncMap { try await cli.ok(["export", "--dir", $0]) }
        #expect(Set(lists).count == 1)
        let t1 = try JSON(parsing: try await cli.ok(["get"] + c + ["t1", "--json"]))
        #expect(t1["fields"]?["location"] == .string("Fontainebleau"))
        #expect(t1["fields"]?["tags"] == .array([.string("climbing"), .string("reading"), .string("karaoke")]))
        #expect(t1["fields"]?["title"] == .string("from B"))
        #expect(t1["conflicts"] == .array([.string("title")]))
        let conflicts = try await cli.ok(["conflicts"] + b + ["--json"])
        #expect(conflicts.contains(#""values":["from B","from A"]"#))
        let t2 = try JSON(parsing: try await cli.ok(["get"] + a + ["t2", "--json"]))
        #expect(t2["deleted"] == .bool(true))
        #expect(t2["fields"]?["note"] == .string("edited while deleted elsewhere"))
        #expect(try await cli.ok(["get"] + a + ["c1", "--json"]).contains(#""made":"offline""#))
        for node in nodes { #expect(node.stop() == 0) }
    }

    /// An edit on A reaches B, both running, at once (the CLI nudges the node; the figure is
    /// printed, the benchmark measures it properly).
    @Test func aLiveEditReachesThePeer() async throws {
        let cli = CLI("live")
        defer { cli.cleanUp() }
        let (na, nb) = try await twoConnectedNodes(cli)
        let b = try ReplicaStore.open(path: cli.path("b/replica.sqlite"))
        var latencies: [Duration] = []
        for i in 1...5 {
            try await cli.ok(["set", "--dir", cli.path("a"), "x", "v=\(i)"])
            let clock = ContinuousClock()
            let start = clock.now
            let seen = try await eventually(within: .seconds(10), every: .milliseconds(2)) {
                try b.storedItem(try ItemID("x"))?.fields.first?.value.jsonText == "\(i)"
            }
            #expect(seen, "edit \(i) never reached B")
            latencies.append(clock.now - start)
        }
        print("edit-to-visibility after the CLI returned (debug build): \(latencies)")
        na.stop()
        nb.stop()
    }

    /// A sync killed mid-way (SIGKILL on either side) resumes where it stopped and converges.
    @Test func aKilledSyncResumes() async throws {
        let cli = CLI("resume")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let items = 4000
        let input = (0..<items).map {
            #"{"id":"i\#($0)","fields":{"n":\#($0),"text":"some text for item \#($0)","tags":["x","y"]}}"#
        }.joined(separator: "\n")
        try await cli.ok(["import", "--dir", cli.path("a")], input: input)
        let total = items * 4  // field states, with _type
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0])
        let bStore = try ReplicaStore.open(path: cli.path("b/replica.sqlite"))
        // Start B, kill it as soon as some (not all) items arrived.
        var b = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
        var partial = 0
        _ = try await eventually(within: .seconds(60), every: .milliseconds(5)) {
            partial = try bStore.counts().items
            return partial > 0
        }
        b.kill9()
        partial = try bStore.counts().items
        print("receiver killed with \(partial) of \(items) items applied")
        #expect(try bStore.integrityCheck() == "ok")
        b = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        if partial < items {
            let status = try await cli.status(cli.path("b"))
            guard case .array(let peers)? = status["peers"],
                let peer = peers.first(where: { $0["connected"] == .bool(true) }),
                case .integer(let received)? = peer["received_updates"]
            else {
                Issue.record("no peer in \(status.text)")
                return
            }
            print("after restart B received \(received) of \(total) field states")
            // Exactly what it lacked: its batches and their progress commit together.
            #expect(Int(received) == total - partial * 4, "the resumed sync resent what B held")
        }
        // Now the sender dies mid-way: C starts empty, A is killed, restarted, and C completes.
        try await cli.cluster(["c"])
        let cPort = freePorts(1)[0]
        let cStore = try ReplicaStore.open(path: cli.path("c/replica.sqlite"))
        let c = try await NodeProcess(dir: cli.path("c"), port: cPort, peers: [ports[0]])
        _ = try await eventually(within: .seconds(120), every: .milliseconds(5)) {
            try cStore.counts().items > 0
        }
        a.kill9()
        let a2 = try await NodeProcess(dir: cli.path("a"), port: ports[0])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b"), cli.path("c")]) != nil)
        for node in [a2, b, c] { node.stop() }
    }
}

/// Node and relay options that would start a useless or harmful daemon are refused up front:
/// an error naming the option, exit 64, nothing started.
@Test func badNodeAndRelayOptionsAreRefused() async throws {
    let cli = CLI("badoptions")
    defer { cli.cleanUp() }
    try await cli.cluster(["a"])
    let port = freePorts(1)[0]
    for arguments in [
        ["relay", "--max-value-bytes", "0"], ["relay", "--max-fields=-1"], ["relay", "--max-sessions", "0"],
        ["relay", "--anti-entropy", "0"], ["node", "--relay-interval", "inf"], ["node", "--anti-entropy=-2"],
    ] {
        let option = arguments[1].split(separator: "=")[0]
        let result = try await cli.run(
            arguments
                + ["--dir", cli.path("a"), "--listen", "127.0.0.1:\(port)", "--no-mdns"].filter {
                    arguments[0] == "node" || $0 != "--no-mdns"
                }
        )
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        // The first line says what is wrong (argument-parser then shows the usage, as for every usage error).
        let first = result.stderr.split(separator: "\n").first ?? ""
        #expect(first.hasPrefix("Error: \(option)"), "\(arguments): \(result.stderr)")
    }
}

@Suite(.serialized) struct OneShotSyncTests {
    /// `lansync sync` exchanges both ways with a running node and exits 0; an unreachable peer
    /// makes it fail with one line naming the peer.
    @Test func syncOnceBothWays() async throws {
        let cli = CLI("oneshot")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "from-a", "v=1"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "from-b", "v=2"])
        let ports = freePorts(2)
        let b = try await NodeProcess(dir: cli.path("b"), port: ports[0])
        let out = try await cli.ok(["sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(ports[0])"])
        #expect(out.contains("synced with b"))
        let a = try await cli.status(cli.path("a"))
        let bs = try await cli.status(cli.path("b"))
        #expect(a["digest"] == bs["digest"])
        #expect(try await cli.ok(["list", "--dir", cli.path("a"), "--json"]).contains("from-b"))

        let failed = try await cli.run([
            "sync", "--dir", cli.path("a"), "--peer", "127.0.0.1:\(ports[1])", "--timeout", "5",
        ])
        #expect(failed.status != 0)
        #expect(
            failed.stderr.split(separator: "\n").count == 1 && failed.stderr.contains("127.0.0.1:\(ports[1])"),
            "\(failed.stderr)"
        )
        let usage = try await cli.run(["sync", "--dir", cli.path("a")])
        #expect(usage.status == 64)
        b.stop()
    }

    /// A running node reads nudges on `nudge.sock` beside `control.sock`; an edit made while the
    /// nudge socket is gone still goes out (`lansync` falls back to the control socket), and
    /// neither socket is left behind once the node stops.
    @Test func theNudgeSocketIsThereWhileTheNodeRuns() async throws {
        let cli = CLI("nudge")
        defer { cli.cleanUp() }
        let (na, nb) = try await twoConnectedNodes(cli)
        let kind =
            try? FileManager.default.attributesOfItem(atPath: cli.path("a/nudge.sock"))[.type] as? FileAttributeType
        #expect(kind == .typeSocket)
        try await cli.ok(["set", "--dir", cli.path("a"), "x", "v=1"])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        unlink(cli.path("a/nudge.sock"))
        try await cli.ok(["set", "--dir", cli.path("a"), "x", "v=2"])
        let b = try ReplicaStore.open(path: cli.path("b/replica.sqlite"))
        _ = try await eventually(within: .seconds(10), every: .milliseconds(10)) {
            try b.storedItem(try ItemID("x"))?.fields.first?.value.jsonText == "2"
        }
        #expect(try b.storedItem(try ItemID("x"))?.fields.first?.value.jsonText == "2")
        #expect(na.stop() == 0)
        #expect(nb.stop() == 0)
        for leftover in ["a/control.sock", "a/nudge.sock", "b/control.sock", "b/nudge.sock"] {
            #expect(!FileManager.default.fileExists(atPath: cli.path(leftover)), "\(leftover) left behind")
        }
    }

    /// A change nobody announces (written while the control socket is unreachable) still reaches
    /// the peers: the node looks at its version vector every 500 ms.
    @Test func unannouncedChangesAreNoticed() async throws {
        let cli = CLI("poll")
        defer { cli.cleanUp() }
        let (na, nb) = try await twoConnectedNodes(cli)
        // Written through the store directly: no nudge.
        let store = try ReplicaStore.open(path: cli.path("a/replica.sqlite"))
        try store.apply(
            .update([.set(try FieldName("v"), .integer(7))]),
            to: try ItemID("x"),
            wallMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000)
        )
        let clock = ContinuousClock()
        let start = clock.now
        let b = try ReplicaStore.open(path: cli.path("b/replica.sqlite"))
        _ = try await eventually(within: .seconds(10), every: .milliseconds(10)) {
            try b.storedItem(try ItemID("x"))?.fields.first?.value.jsonText == "7"
        }
        #expect(try b.storedItem(try ItemID("x"))?.fields.first?.value.jsonText == "7")
        print("an unannounced change reached the peer after \(clock.now - start)")
        na.stop()
        nb.stop()
    }
}

/// Two running nodes, A and B, each the other's static peer, sharing item `x` (v=0).
func twoConnectedNodes(_ cli: CLI) async throws -> (NodeProcess, NodeProcess) {
    try await cli.cluster(["a", "b"])
    let ports = freePorts(2)
    let na = try await NodeProcess(dir: cli.path("a"), port: ports[0], peers: [ports[1]])
    let nb = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
    try await cli.ok(["add", "--dir", cli.path("a"), "--id", "x", "v=0"])
    #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
    return (na, nb)
}
