import Foundation
import LansyncJSON
import Testing

/// Issue 35 in the mDNS lab, on networks like real ones: IPv6-only, dual-stack and link-local-only
/// hosts; a host on two bridges; a container bridge; a firewall that drops one family; a VPN-like
/// link that multicast does not cross. Every node listens with the default (`[::]:7420`, both
/// families), and `lansync doctor` is run in each scenario. Part of the lab suite (one lab at a
/// time, serialized).
extension DiscoveryLabTests {
    /// Starts a node in lab host `i` with the default `--listen`.
    func defaultNode(_ cli: CLI, _ i: Int, extra: [String] = []) async throws -> NodeProcess {
        try await NodeProcess(dir: cli.path("d\(i)"), port: 7420, arguments: extra, labHost: i)
    }

    /// Each peer of `dir`'s status, by name.
    func peers(_ cli: CLI, _ dir: String) async throws -> [String: JSON] {
        guard case .array(let list)? = try await cli.status(dir)["peers"] else { return [:] }
        var byName: [String: JSON] = [:]
        for peer in list { if case .string(let name)? = peer["name"] { byName[name] = peer } }
        return byName
    }

    /// The addresses `peer` is advertised at, in the order they are dialled.
    func advertised(_ peer: JSON?) -> [String] {
        guard case .array(let list)? = peer?["advertised"] else { return [] }
        return list.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// The addresses `dir`'s node knows `name` to be advertised at, once it has seen the advert
    /// (a peer that dialled in first may be connected before its advert is resolved here).
    func advertised(_ cli: CLI, _ dir: String, _ name: String) async throws -> [String] {
        try await eventually(within: .seconds(20)) {
            let list = advertised(try await peers(cli, dir)[name])
            return list.isEmpty ? nil : list
        } ?? []
    }

    /// Waits until `dir`'s node shows a connected session with each of `names`.
    func waitConnected(_ cli: CLI, _ dir: String, to names: [String], seconds: Int = 60) async throws -> Bool {
        try await eventually(within: .seconds(seconds)) {
            let shown = try await peers(cli, dir)
            return names.allSatisfy { shown[$0]?["connected"] == .bool(true) }
        }
    }

    /// Waits for `dirs` to converge; records an issue with the replicas and logs if they do not.
    func converge(_ cli: CLI, _ dirs: [String], _ nodes: [NodeProcess]) async throws {
        guard try await cli.waitForConvergence(dirs, timeout: .seconds(30)) == nil else { return }
        Issue.record("no convergence:\n\(await cli.convergenceReport(dirs))\n\(nodes.map(\.logText))")
    }

    /// `lansync doctor --json` in lab host `i`: its exit status and findings by topic.
    func doctorFindings(
        _ cli: CLI,
        _ i: Int
    ) async throws -> (status: Int32, findings: [String: [JSON]], output: String) {
        let (status, output) = await Lab.run([
            "exec", String(i), CLI.binary, "doctor", "--dir", cli.path("d\(i)"), "--json",
        ])
        let line = output.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
        guard case .array(let all)? = try JSON(parsing: line)["findings"] else { return (status, [:], output) }
        var byTopic: [String: [JSON]] = [:]
        for finding in all {
            if case .string(let topic)? = finding["topic"] { byTopic[topic, default: []].append(finding) }
        }
        return (status, byTopic, output)
    }

    /// An IPv6-only host, two dual-stack hosts and a host with only a link-local IPv6 address
    /// find each other and converge. A dual-stack peer is dialled at its IPv6 address first and
    /// known at its IPv4 one too; the link-local host is dialled through the interface's scope
    /// (`fe80::…%v1`); doctor in the IPv6-only and link-local hosts finds nothing wrong.
    @Test func ipv6OnlyDualStackAndLinkLocalHostsConverge() async throws {
        let lab = try await Lab(hosts: 4, spec: "a46,a46,a6,al")
        defer { lab.down() }
        let cli = CLI("lab-families")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2", "d3", "d4"])
        for i in 1...4 { try await cli.ok(["add", "--dir", cli.path("d\(i)"), "--id", "from\(i)", "host=\(i)"]) }
        let nodes = try await (1...4).asyncMap { try await defaultNode(cli, $0) }
        defer { for node in nodes { node.stop() } }
        let dirs = (1...4).map { cli.path("d\($0)") }
        try await converge(cli, dirs, nodes)
        for i in 1...4 {
            let others = (1...4).filter { $0 != i }.map { "d\($0)" }
            #expect(try await waitConnected(cli, dirs[i - 1], to: others), "d\(i): \(nodes[i - 1].logText)")
        }
        #expect(nodes[0].logText.contains("listening on [::]:7420"))

        // Dual stack: d2 is known to d1 in both families, IPv6 first.
        let d2 = try await advertised(cli, dirs[0], "d2")
        #expect(d2.contains("10.77.0.2:7420") && d2.first?.hasPrefix("[fd77::") == true, "\(d2)")
        // IPv6 only: d3 is known at IPv6 addresses alone, and knows d1 only so.
        let d3 = try await advertised(cli, dirs[0], "d3")
        #expect(d3.allSatisfy { $0.hasPrefix("[") } && !d3.isEmpty, "\(d3)")
        let d1 = try await advertised(cli, dirs[2], "d1")
        #expect(d1.allSatisfy { $0.hasPrefix("[") } && !d1.isEmpty, "\(d1)")
        // Link-local only: d4 is advertised at its fe80:: address with d1's interface as scope,
        // and d1 dialled it there (or d4 dialled d1 from its link-local address).
        let d4 = try await advertised(cli, dirs[0], "d4")
        #expect(d4.contains { $0.hasPrefix("[fe80:") && $0.hasSuffix("%v1]:7420") }, "\(d4)")
        let sessionLine = nodes[0].logText.split(separator: "\n").first { $0.contains("session with d4") } ?? ""
        #expect(sessionLine.contains("[fe80:"), "\(nodes[0].logText)")

        for host in [3, 4] {
            let (status, findings, output) = try await doctorFindings(cli, host)
            #expect(status == 0, "doctor in host \(host): \(output)")
            let advert = findings["advert"] ?? []
            #expect(advert.contains { DoctorTests.says($0).contains("own advert is seen") }, "\(output)")
            for name in ["d1", "d2"] {
                #expect(
                    findings[name]?.first?["verdict"] == .string("ok"),
                    "doctor in host \(host), \(name): \(output)"
                )
            }
        }
    }

    /// A firewall drops IPv6 to d1's port: d2 is given d1's IPv6 address first, and Happy Eyeballs
    /// goes on to its IPv4 address without waiting for the first to time out (no failed attempt
    /// is recorded). Once IPv6 is open again, d2 still dials the IPv4 address that worked first.
    @Test func happyEyeballsTakesTheFamilyThatAnswersAndRemembersIt() async throws {
        let lab = try await Lab(hosts: 2, spec: "a46,a46")
        defer { lab.down() }
        let cli = CLI("lab-eyeballs")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2"])
        await Lab.run(["block", "1", "7420", "6"])
        // d1 takes no advert (it never dials d2): every session is one d2 dialled.
        var first = try await defaultNode(cli, 1, extra: ["--interfaces", "none0"])
        let second = try await defaultNode(cli, 2)
        defer {
            first.stop()
            second.stop()
        }
        #expect(try await waitConnected(cli, cli.path("d2"), to: ["d1"]), "\(second.logText)")
        let peer = try await peers(cli, cli.path("d2"))["d1"]
        #expect(advertised(peer).first?.hasPrefix("[fd77::") == true && advertised(peer).contains("10.77.0.1:7420"))
        #expect(second.logText.contains("dialled 10.77.0.1:7420"), "\(second.logText)")
        #expect(peer?["last_error"] == .null, "no attempt failed: \(second.logText)")
        let (status, findings, output) = try await doctorFindings(cli, 2)
        #expect(findings["d1"]?.first?["verdict"] == .string("ok"), "\(output)")
        #expect(status == 0, "\(output)")

        // IPv6 opens; d1 restarts: d2 dials the address that worked, IPv4, first again. While d1
        // is down, d2 keeps dialling (IPv4 refused, then IPv6 at once, as Happy Eyeballs goes on
        // after a refusal): should d1 come up between the two, IPv6 answers that round, and IPv6
        // is then the address that worked, the one to dial first at the next restart. So d1
        // restarts up to three times, each expecting the address the last session reached;
        // without the preference, IPv6 (advertised first) answers every time, and a restart
        // after one that reached IPv4 fails. (CI saw the race twice in a row under load, and
        // the earlier form of this test, which expected IPv4 after every restart, could not
        // recover from it.)
        await Lab.run(["unblock", "1"])
        var sessions: [Substring] = []
        var remembered = "10.77.0.1:7420"
        var kept = false
        for restart in 1...3 {
            let ended = { second.logText.split(separator: "\n").filter { $0.contains("ended") }.count }
            let endedBefore = ended()
            first.stop()
            _ = await eventually(within: .seconds(15), every: .milliseconds(50)) { ended() > endedBefore }
            #expect(ended() > endedBefore, "\(second.logText)")
            first = try await defaultNode(cli, 1, extra: ["--interfaces", "none0"])
            #expect(try await waitConnected(cli, cli.path("d2"), to: ["d1"]), "\(second.logText)")
            sessions = second.logText.split(separator: "\n").filter {
                $0.contains("session with d1") && $0.contains("started")
            }
            if sessions.last?.hasSuffix("dialled \(remembered)") == true {
                kept = true
                break
            }
            print(
                "happy eyeballs: restart \(restart) of d1 met a dial round between its two attempts: \(sessions.last ?? "")"
            )
            if let last = sessions.last, let at = last.range(of: "dialled ") {
                remembered = String(last[at.upperBound...])
            }
        }
        #expect(sessions.first?.hasSuffix("dialled 10.77.0.1:7420") == true, "\(second.logText)")
        #expect(kept, "after a restart, d2 dials first the address that last worked: \(second.logText)")
    }

    /// d1 is on bridges a and b; d2 only on a, d3 only on b. d1 finds each on its own bridge (at
    /// that bridge's address alone) and carries changes between them. Doctor in d1 finds both well.
    @Test func aHostOnTwoBridgesReachesPeersOnEach() async throws {
        let lab = try await Lab(hosts: 3, spec: "ab4,a4,b4")
        defer { lab.down() }
        let cli = CLI("lab-bridges")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2", "d3"])
        for i in 1...3 { try await cli.ok(["add", "--dir", cli.path("d\(i)"), "--id", "from\(i)", "host=\(i)"]) }
        let nodes = try await (1...3).asyncMap { try await defaultNode(cli, $0) }
        defer { for node in nodes { node.stop() } }
        let dirs = (1...3).map { cli.path("d\($0)") }
        try await converge(cli, dirs, nodes)
        #expect(try await waitConnected(cli, dirs[0], to: ["d2", "d3"]), "\(nodes[0].logText)")
        #expect(try await advertised(cli, dirs[0], "d2") == ["10.77.0.2:7420"])
        #expect(try await advertised(cli, dirs[0], "d3") == ["10.78.0.3:7420"])
        let (status, findings, output) = try await doctorFindings(cli, 1)
        #expect(
            findings["d2"]?.first?["verdict"] == .string("ok") && findings["d3"]?.first?["verdict"] == .string("ok")
        )
        #expect(status == 0, "\(output)")
    }

    /// Both hosts also sit on a bridge reached through an interface named `docker1`/`docker2`:
    /// by default neither takes an advert from it, so neither knows, nor dials, the other's
    /// address there.
    @Test func aContainerBridgeIsNeverDialled() async throws {
        let lab = try await Lab(hosts: 2, spec: "ad4,ad4")
        defer { lab.down() }
        let cli = CLI("lab-docker")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2"])
        let nodes = try await (1...2).asyncMap { try await defaultNode(cli, $0) }
        defer { for node in nodes { node.stop() } }
        for (i, other) in [(1, 2), (2, 1)] {
            #expect(try await waitConnected(cli, cli.path("d\(i)"), to: ["d\(other)"]), "\(nodes[i - 1].logText)")
            #expect(try await advertised(cli, cli.path("d\(i)"), "d\(other)") == ["10.77.0.\(other):7420"])
            #expect(!nodes[i - 1].logText.contains("10.78.0."), "\(nodes[i - 1].logText)")
        }
        // The daemon does see the advert there: doctor (which surveys every interface) says so.
        let (_, _, output) = try await doctorFindings(cli, 1)
        #expect(output.contains("10.78.0.2") && output.contains("docker1"), "\(output)")
    }

    /// d3 sits behind a point-to-point link to d1 (a VPN: no multicast crosses it) and is told
    /// only d1's address there. d1 passes on where it reaches d2, and d3 and d2 meet directly.
    @Test func aPeerBehindAPointToPointLinkFindsTheOthersThroughWhatMembersPassOn() async throws {
        let lab = try await Lab(hosts: 3, spec: "a4,a4,-")
        defer { lab.down() }
        try await lab.pointToPoint(1, 3)
        let cli = CLI("lab-vpn")
        defer { cli.cleanUp() }
        try await cli.cluster(["d1", "d2", "d3"])
        for i in 1...3 { try await cli.ok(["add", "--dir", cli.path("d\(i)"), "--id", "from\(i)", "host=\(i)"]) }
        var nodes = [try await defaultNode(cli, 1), try await defaultNode(cli, 2)]
        defer { for node in nodes { node.stop() } }
        let dirs = (1...3).map { cli.path("d\($0)") }
        // Addresses travel in hellos, and d1 passes on only members it has been up to date with:
        // d3 is started once d1 and d2 have met and agree. Started before (CI run 72, and a
        // loaded run here: mDNS between d1 and d2 took longer than d3's dial), d3's one hello
        // from d1 named no d2, and d3 would learn d2 only at its next session with d1.
        #expect(try await waitConnected(cli, dirs[0], to: ["d2"]), "\(nodes[0].logText)")
        try await converge(cli, Array(dirs.prefix(2)), nodes)
        nodes.append(try await defaultNode(cli, 3, extra: ["--peer", "10.79.0.1:7420"]))
        try await converge(cli, dirs, nodes)
        #expect(try await waitConnected(cli, dirs[2], to: ["d1", "d2"]), "\(nodes[2].logText)")
        #expect(!nodes[2].logText.contains("mDNS: found"), "no advert reaches d3: \(nodes[2].logText)")
        let (_, findings, output) = try await doctorFindings(cli, 3)
        #expect(findings["d2"]?.first?["verdict"] == .string("ok"), "\(output)")
        #expect(
            (findings["advert"] ?? []).contains { $0["verdict"] != .string("ok") },
            "doctor says multicast does not come back here: \(output)"
        )
    }
}
