import Foundation
import LansyncJSON
import Testing

/// `lansync doctor` on the real binary: on loopback (no mDNS here: it says so, and names a peer
/// that is down), and in the mDNS lab (adverts seen, a firewall dropping the port, another
/// cluster's advert, a revoked member, the daemon stopped).
@Suite struct DoctorTests {
    /// The findings of `doctor --json` whose topic is `topic`.
    static func findings(_ json: String, topic: String) throws -> [JSON] {
        let line = json.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
        guard case .array(let all)? = try JSON(parsing: line)["findings"] else { return [] }
        return all.filter { $0["topic"] == .string(topic) }
    }

    /// A system bus address where nothing listens.
    static let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/lansync-test-bus"]

    static func says(_ finding: JSON) -> String {
        if case .string(let text)? = finding["says"] { text } else { "" }
    }

    @Test func doctorNamesAPeerThatIsDownAndTheMissingDaemon() async throws {
        let cli = CLI("doctor")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        try await cli.ok(["cluster", "create", cli.path("other.pem")])
        try await cli.ok(["init", "--dir", cli.path("c"), "--cluster", cli.path("other.pem"), "--name", "c"])
        let p = freePorts(3)
        // c belongs to another cluster, and a was told to dial it.
        let c = try await NodeProcess(dir: cli.path("c"), port: p[2])
        defer { c.stop() }
        let a = try await NodeProcess(dir: cli.path("a"), port: p[0], peers: [p[1], p[2]])
        defer { a.stop() }
        let b = try await NodeProcess(dir: cli.path("b"), port: p[1], peers: [p[0]])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "x", "n=1"])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        // Both dial each other: until a's own dial has won or lost against b's, a may count b as
        // dialled in, or for a moment as not connected.
        _ = try await eventually(within: .seconds(30)) {
            guard case .array(let peers)? = try await cli.status(cli.path("a"))["peers"] else { return false }
            return peers.contains {
                $0["name"] == .string("b") && $0["connected"] == .bool(true) && $0["source"] == .string("static")
            }
        }

        let up = try await cli.run(["doctor", "--dir", cli.path("a"), "--json"], environment: Self.noBus)
        let connected = try Self.findings(up.stdout, topic: "b")
        #expect(connected.count == 1 && connected.first?["verdict"] == .string("ok"), "\(up.stdout)")
        #expect(Self.says(connected.first ?? .null).contains("connected"), "\(up.stdout)")
        // The node runs with --no-mdns: doctor judges what it was asked to do, so mDNS is a
        // note that says so, not a problem (the daemon is not even asked).
        let mdns = try Self.findings(up.stdout, topic: "mdns")
        #expect(
            mdns.count == 1 && mdns.first?["verdict"] == .string("note")
                && Self.says(mdns.first ?? .null).contains("off on purpose"),
            "\(up.stdout)"
        )
        // Loopback is no problem for a node with mDNS off whose peers are all on this machine.
        let node = try Self.findings(up.stdout, topic: "node")
        #expect(node.first?["verdict"] == .string("ok"), "\(up.stdout)")
        #expect(up.status == 1 && up.stderr.contains("problem(s) found"), "\(up.stderr)")
        let stranger = try Self.findings(up.stdout, topic: "127.0.0.1:\(p[2])")
        #expect(
            stranger.first?["verdict"] == .string("problem")
                && Self.says(stranger.first ?? .null).contains("another cluster"),
            "\(up.stdout)"
        )
        if case .string(let fix)? = stranger.first?["fix"] {
            #expect(fix.contains("make it join this one"), "\(fix)")
        } else {
            Issue.record("no fix for a peer of another cluster: \(up.stdout)")
        }

        b.stop()
        // b again, with its clock three days behind: said, as a problem.
        let skewed = try await NodeProcess(
            dir: cli.path("b"),
            port: p[1],
            peers: [p[0]],
            environment: ["LANSYNC_TEST_CLOCK_SKEW_MS": String(-3 * 86_400_000)]
        )
        _ = try await eventually(within: .seconds(30)) {
            guard case .array(let peers)? = try await cli.status(cli.path("a"))["peers"] else { return false }
            return peers.contains { $0["clock_offset_ms"] != .null }
        }
        let late = try await cli.run(["doctor", "--dir", cli.path("a"), "--json"], environment: Self.noBus)
        let clock = try Self.findings(late.stdout, topic: "b").filter { Self.says($0).contains("clock") }
        #expect(
            clock.first?["verdict"] == .string("problem")
                && Self.says(clock.first ?? .null).contains("3 day(s) behind"),
            "\(late.stdout)"
        )
        let text = try await cli.ok(["status", "--dir", cli.path("a")])
        #expect(text.contains("CLOCK    b's clock is 3.0 day(s) behind this machine's"), "\(text)")
        skewed.stop()
        let down = try await cli.run(["doctor", "--dir", cli.path("a")], environment: Self.noBus)
        print(down.stdout)
        #expect(down.status == 1)
        #expect(
            down.stdout.contains("PROBLEM") && down.stdout.contains("nothing listens at 127.0.0.1:\(p[1])"),
            "\(down.stdout)"
        )
        #expect(down.stdout.contains("fix: start 'lansync node' on it"), "\(down.stdout)")
        // Where no node runs, doctor cannot know it would run without mDNS: it asks the daemon.
        // D-Bus is pointed nowhere (the survey must not ask a daemon of this machine's own network
        // to browse its LAN: test traffic stays on loopback), and it says so.
        let idle = try await cli.run(["doctor", "--dir", cli.path("b"), "--json"], environment: Self.noBus)
        let daemon = try Self.findings(idle.stdout, topic: "mdns")
        #expect(
            daemon.first?["verdict"] == .string("problem")
                && Self.says(daemon.first ?? .null).contains("D-Bus does not answer"),
            "\(idle.stdout)"
        )
    }
}

extension DiscoveryLabTests {
    /// `lansync doctor` run inside lab host 1, as the node there sees the LAN.
    func doctor(_ cli: CLI, _ host: Int, _ dir: String) async -> (Int32, String) {
        await Lab.run(["exec", String(host), CLI.binary, "doctor", "--dir", dir, "--json"])
    }

    @Test func doctorNamesWhyAPeerIsNotReached() async throws {
        let lab = try await Lab(hosts: 4)
        defer { lab.down() }
        let cli = CLI("mdns-doctor")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2", "d3"])
        try await cli.ok(["cluster", "create", cli.path("other.pem")])
        try await cli.ok(["init", "--dir", cli.path("x4"), "--cluster", cli.path("other.pem"), "--name", "other"])
        // d1 is also told of an address on a network the lab has no route to.
        let d1 = try await NodeProcess(
            dir: cli.path("d1"),
            port: 7420,
            arguments: ["--listen", "\(Lab.address(1)):7420", "--peer", "10.99.0.9:7420"],
            labHost: 1
        )
        let nodes = try await [d1, node(cli, 2), node(cli, 4, dir: cli.path("x4"))]
        defer { for node in nodes { _ = node.stop() } }
        try await cli.ok(["add", "--dir", cli.path("d2"), "--id", "from2", "n=2"])
        #expect(try await cli.waitForConvergence([cli.path("d1"), cli.path("d2")], timeout: .seconds(30)) != nil)
        let id2 = try await nodeID(cli, cli.path("d2"))
        _ = try await eventually(within: .seconds(30)) { try await connectedPeers(cli, cli.path("d1")).contains(id2) }

        // All well with d2; d3 was never started (known as a member once it is admitted: here
        // only through the cluster file, so it is not listed); x4 belongs to another cluster.
        var (status, output) = await doctor(cli, 1, cli.path("d1"))
        print(output)
        let d2 = try DoctorTests.findings(output, topic: "d2")
        #expect(
            d2.first?["verdict"] == .string("ok") && DoctorTests.says(d2.first ?? .null).contains("connected"),
            "\(output)"
        )
        let mdns = try DoctorTests.findings(output, topic: "mdns")
        #expect(mdns.first?["verdict"] == .string("ok"), "\(output)")
        let adverts = try DoctorTests.findings(output, topic: "advert")
        #expect(
            adverts.contains { $0["verdict"] == .string("ok") && DoctorTests.says($0).contains("own advert is seen") },
            "\(output)"
        )
        #expect(
            adverts.contains {
                DoctorTests.says($0).contains("another cluster") && DoctorTests.says($0).contains(Lab.address(4))
            },
            "\(output)"
        )
        let unrouted = try DoctorTests.findings(output, topic: "10.99.0.9:7420")
        #expect(
            unrouted.first?["verdict"] == .string("problem")
                && DoctorTests.says(unrouted.first ?? .null).contains("no route to 10.99.0.9:7420"),
            "\(output)"
        )
        #expect(status == 1, "only the address with no route is wrong: \(output)")

        // A firewall on the way drops d2's port: the session goes, the advert stays.
        nodes[0].stop()
        await Lab.run(["block", "2", "7420"])
        defer { Lab.runBlocking(["unblock", "2"]) }
        (status, output) = await doctor(cli, 1, cli.path("d1"))
        print(output)
        let blocked = try DoctorTests.findings(output, topic: "d2")
        #expect(status == 1)
        #expect(
            blocked.contains {
                $0["verdict"] == .string("problem")
                    && DoctorTests.says($0).contains("no answer from \(Lab.address(2)):7420")
            },
            "\(output)"
        )
        #expect(output.contains("a firewall drops TCP port 7420"), "\(output)")
        await Lab.run(["unblock", "2"])

        // d2 revoked: said so, not probed.
        try await cli.ok(["revoke", "--dir", cli.path("d1"), "d2"])
        (status, output) = await doctor(cli, 1, cli.path("d1"))
        let revoked = try DoctorTests.findings(output, topic: "d2")
        #expect(revoked.count == 1 && DoctorTests.says(revoked.first ?? .null).contains("revoked"), "\(output)")

        // The daemon stopped on host 1.
        await Lab.run(["avahi-stop", "1"])
        (status, output) = await doctor(cli, 1, cli.path("d1"))
        print(output)
        let stopped = try DoctorTests.findings(output, topic: "mdns")
        #expect(status == 1)
        #expect(
            stopped.first?["verdict"] == .string("problem")
                && DoctorTests.says(stopped.first ?? .null).contains("the Avahi daemon is not running"),
            "\(output)"
        )
    }
}
