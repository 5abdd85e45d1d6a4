import Foundation
import LansyncJSON
import LansyncTestSupport
import Testing

/// A cluster of an older lansync (protocol 1.13: no signed writes) upgraded in place to this one
/// (issue 64, Docs/SECURITY.md "Requiring signed writes"), on two real binaries: the older one
/// is `LANSYNC_OLDER_BIN`, which `scripts/upgrade-test.sh` builds from a given revision (a
/// revision's build takes minutes, so the README's test command does not run it).
@Suite(.serialized) struct UpgradeTests {
    static let older = ProcessInfo.processInfo.environment["LANSYNC_OLDER_BIN"]

    /// One binary's `status --json` of each directory agree (digest and version vector).
    func converged(_ cli: CLI, _ dirs: [String], binary: String) async throws -> Bool {
        try await eventually(within: .seconds(60)) {
            var seen: Set<String> = []
            for dir in dirs {
                let result = try await cli.run(["status", "--dir", cli.path(dir), "--json"], binary: binary)
                let status = try JSON(parsing: result.stdout)
                seen.insert(
                    "\(status["digest"].map { "\($0)" } ?? "none") \(status["version_vector"].map { "\($0)" } ?? "")"
                )
            }
            return seen.count == 1
        }
    }

    func value(_ cli: CLI, _ dir: String, _ item: String) async throws -> JSON? {
        try JSON(parsing: try await cli.ok(["get", "--dir", cli.path(dir), item, "--json"]))["fields"]?["n"]
    }

    /// The older cluster writes, one member (b) edits offline, the relay and a are upgraded and
    /// a requires signed writes. b, still older, is told to upgrade and none of its writes is
    /// taken; upgraded, it signs the writes it made before (the authority had not seen them, so
    /// they are past the requirement's cut) and every edit reaches every replica: none lost,
    /// none refused. A member that only ever syncs once (`lansync sync`) signs its older writes
    /// as a node's start does.
    @Test(
        .enabled(
            if: older != nil,
            "needs LANSYNC_OLDER_BIN, a lansync of protocol 1.13 (scripts/upgrade-test.sh builds one)"
        )
    )
    func anUnsignedClusterUpgradesInPlaceWithNoEditLost() async throws {
        let older = try #require(Self.older)
        let cli = CLI("upgrade")
        defer { cli.cleanUp() }
        func run(_ arguments: [String], with binary: String) async throws {
            let result = try await cli.run(arguments, binary: binary)
            #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.stderr)")
        }
        try await run(["cluster", "create", cli.path("cluster.pem")], with: older)
        for name in ["r", "a", "b", "c"] {
            try await run(
                ["init", "--dir", cli.path(name), "--cluster", cli.path("cluster.pem"), "--name", name],
                with: older
            )
        }
        let p = freePorts(3)
        func relay(_ binary: String) async throws -> NodeProcess {
            try await NodeProcess(
                dir: cli.path("r"),
                port: p[0],
                arguments: ["--listen", "127.0.0.1:\(p[0])", "--settle", "latest"],
                command: "relay",
                binary: binary
            )
        }
        func node(_ name: String, _ port: Int, _ binary: String) async throws -> NodeProcess {
            try await NodeProcess(
                dir: cli.path(name),
                port: port,
                extra: ["--relay", "127.0.0.1:\(p[0])", "--no-gossip"],
                binary: binary
            )
        }
        var r = try await relay(older)
        var a = try await node("a", p[1], older)
        var b = try await node("b", p[2], older)
        defer {
            for process in [r, a, b] { process.stop() }
        }
        try await run(["add", "--dir", cli.path("a"), "--id", "x1", "n=1"], with: older)
        try await run(["add", "--dir", cli.path("b"), "--id", "y1", "n=1"], with: older)
        #expect(try await converged(cli, ["r", "a", "b"], binary: older))

        // c never runs a node: an item written by the older binary, which it will pass on with
        // a one-shot `lansync sync` once upgraded.
        try await run(["add", "--dir", cli.path("c"), "--id", "z1", "n=1"], with: older)

        // b offline, still older: an edit and a new item, unsigned, that nobody else has seen.
        #expect(b.stop() == 0)
        try await run(["set", "--dir", cli.path("b"), "y1", "n=2"], with: older)
        try await run(["add", "--dir", cli.path("b"), "--id", "y2", "n=1"], with: older)

        // The relay and a upgraded; a writes, signed, and requires signed writes.
        #expect(r.stop() == 0)
        #expect(a.stop() == 0)
        r = try await relay(CLI.binary)
        a = try await node("a", p[1], CLI.binary)
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "x2", "n=1"])
        #expect(try await cli.waitForConvergence(["r", "a"].map(cli.path)) != nil)
        let set = try await cli.ok(["cluster", "set", "--dir", cli.path("a"), "signed-writes", "on"])
        #expect(set.contains("signed-writes on"), "\(set)")
        #expect(
            try await eventually(within: .seconds(30)) {
                try await cli.ok(["cluster", "set", "--dir", cli.path("r")]).contains("signed-writes on")
            }
        )

        // b, still older, is refused with the reason and takes nothing of its writes across.
        b = try await node("b", p[2], older)
        #expect(
            await b.logContains("requires signed writes", "upgrade lansync on this machine", within: 30),
            "b's log: \(b.logText)"
        )
        #expect(try await value(cli, "a", "y1") == .integer(1))
        #expect(b.stop() == 0)

        // b upgraded: it signs what it wrote before, and everything converges.
        b = try await node("b", p[2], CLI.binary)
        #expect(await b.logContains("this replica wrote before it could sign its writes", within: 30), "\(b.logText)")
        #expect(try await cli.waitForConvergence(["r", "a", "b"].map(cli.path)) != nil)
        for dir in ["r", "a", "b"] {
            #expect(try await value(cli, dir, "x1") == .integer(1), "\(dir)")
            #expect(try await value(cli, dir, "x2") == .integer(1), "\(dir)")
            #expect(try await value(cli, dir, "y1") == .integer(2), "\(dir): b's offline edit")
            #expect(try await value(cli, dir, "y2") == .integer(1), "\(dir): b's offline item")
            let status = try await cli.ok(["status", "--dir", cli.path(dir)])
            #expect(!status.contains("written unsigned"), "\(dir) refused a write: \(status)")
        }
        // Each upgraded member signed the live writes it made before (a: x1's two versions), and
        // b's offline item reaches a signed.
        #expect(a.logText.contains("signed 2 field version(s) this replica wrote before it could sign"), "\(a.logText)")
        let offline = try await cli.ok(["history", "--dir", cli.path("a"), "y2", "--json"])
        #expect(offline.contains("\"signed\":true") && !offline.contains("\"signed\":false"), "\(offline)")

        // c, upgraded, syncs once with a: its older item is signed on the way (c's writer is past
        // the requirement's cut, so unsigned it would be refused) and taken.
        try await cli.ok(["sync", "--dir", cli.path("c"), "--peer", "127.0.0.1:\(p[1])"])
        #expect(try await value(cli, "a", "z1") == .integer(1), "c's item reached a")
        let synced = try await cli.ok(["history", "--dir", cli.path("a"), "z1", "--json"])
        #expect(synced.contains("\"signed\":true") && !synced.contains("\"signed\":false"), "\(synced)")
        #expect(!(try await cli.ok(["status", "--dir", cli.path("a")])).contains("written unsigned"))
        #expect(r.isRunning && a.isRunning && b.isRunning)
    }
}
