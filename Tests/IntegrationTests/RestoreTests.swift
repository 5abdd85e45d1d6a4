import Foundation
import LansyncCore
import LansyncJSON
import Testing

/// Issue 12: data directories restored from a backup, or copied and used twice, with the real
/// binary: they find out on first contact, get back what they lost, and converge.
@Suite(.serialized) struct RestoreTests {
    static func copyDirectory(_ from: String, _ to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    /// The item as `get --json` shows it, without its sync state (which is each node's own).
    func item(_ cli: CLI, _ dir: String, _ id: String) async throws -> JSON {
        let json = try JSON(parsing: try await cli.ok(["get", "--dir", dir, id, "--json"]))
        guard case .object(let members) = json else { return json }
        return .object(members.filter { $0.key != "sync" })
    }

    /// The scenario: B syncs with A; B's directory is copied; B edits and syncs; the copy is
    /// put back; B edits once, offline; B syncs. Before: "sent 0, received 0" and B stayed without
    /// the lost edit forever. Now B gets it back and both show the same.
    @Test(arguments: [true, false])
    func aRestoredBackupGetsBackWhatItLost(editsOffline: Bool) async throws {
        let cli = CLI("restore")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: a, port: port)
        defer { node.stop() }
        let sync = ["sync", "--dir", b, "--peer", "127.0.0.1:\(port)"]
        let id = try await cli.ok(["add", "--dir", b, "v=1"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try await cli.ok(sync)
        try Self.copyDirectory(b, cli.path("backup"))
        try await cli.ok(["set", "--dir", b, id, "after=1"])
        try await cli.ok(sync)
        try Self.copyDirectory(cli.path("backup"), b)
        if editsOffline {
            let edit = try await cli.run(["set", "--dir", b, id, "new=2"])
            #expect(edit.succeeded)
            #expect(edit.stderr.contains("restored from a backup"), "the user is told: \(edit.stderr)")
        }
        let result = try await cli.ok(sync)
        print("restore (offline edit: \(editsOffline)): \(result.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(result.contains("received 1"), "the lost edit comes back: \(result)")
        let onA = try await item(cli, a, id)
        let onB = try await item(cli, b, id)
        #expect(onA == onB)
        #expect(onB["fields"]?["after"] == .integer(1))
        if editsOffline { #expect(onA["fields"]?["new"] == .integer(2)) }
        #expect(try await cli.waitForConvergence([a, b], timeout: .seconds(20)) != nil)
    }

    /// A directory copied to a second place and used there too (a fork): the copy takes its own
    /// identity, and all three replicas converge with every edit of both copies.
    @Test func aForkedDirectoryConverges() async throws {
        let cli = CLI("fork")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b, b2) = (cli.path("a"), cli.path("b"), cli.path("b2"))
        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: a, port: port)
        defer { node.stop() }
        let id = try await cli.ok(["add", "--dir", b, "v=1"]).trimmingCharacters(in: .whitespacesAndNewlines)
        try await cli.ok(["sync", "--dir", b, "--peer", "127.0.0.1:\(port)"])
        try Self.copyDirectory(b, b2)
        let forked = try await cli.run(["set", "--dir", b2, id, "from-copy=1"])
        #expect(forked.succeeded && forked.stderr.contains("copied or moved"), "\(forked.stderr)")
        try await cli.ok(["set", "--dir", b, id, "from-original=1"])
        for dir in [b, b2, b] { try await cli.ok(["sync", "--dir", dir, "--peer", "127.0.0.1:\(port)"]) }
        let ids = try await [b, b2].asyncMap { try await cli.status($0)["node_id"] }
        #expect(ids[0] != ids[1])
        #expect(try await cli.waitForConvergence([a, b, b2], timeout: .seconds(20)) != nil)
        let shown = try await item(cli, b2, id)
        #expect(shown["fields"]?["from-copy"] == .integer(1))
        #expect(shown["fields"]?["from-original"] == .integer(1))
    }

    /// How many writers a node's `status --json` names in its version vector (as it tells it).
    func writers(_ cli: CLI, _ dir: String) async throws -> Int {
        guard case .object(let members)? = try await cli.status(dir)["version_vector"] else { return -1 }
        return members.count
    }

    /// Issue 30's figure: a machine restored from one backup again and again takes a new writer
    /// each time, and its peers' vectors grew by one entry per restore, for ever. Now, once c's
    /// node runs and every member has seen all its retired writers wrote, c folds them and its
    /// peers take the folds from its hello: every vector is back to one writer per member.
    @Test func manyRestoresLeaveTheVectorsAsSmallAsBefore() async throws {
        let restores = Int(ProcessInfo.processInfo.environment["LANSYNC_RESTORES"] ?? "") ?? 300
        let cli = CLI("restores")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b", "c"])
        let (a, b, c) = (cli.path("a"), cli.path("b"), cli.path("c"))
        let ports = freePorts(3)
        let collect = ["--collect-interval", "1"]
        let nodeA = try await NodeProcess(dir: a, port: ports[0], extra: collect)
        defer { nodeA.stop() }
        let nodeB = try await NodeProcess(dir: b, port: ports[1], peers: [ports[0]], extra: collect)
        defer { nodeB.stop() }
        let sync = ["sync", "--dir", c, "--peer", "127.0.0.1:\(ports[0])"]
        try await cli.ok(["add", "--dir", a, "--id", "x", "from_a=1"])
        try await cli.ok(["set", "--dir", b, "x", "from_b=1"])
        try await cli.ok(sync)
        try await cli.ok(["set", "--dir", c, "x", "from_c=0"])
        try await cli.ok(sync)
        #expect(try await cli.waitForConvergence([a, b, c], timeout: .seconds(30)) != nil)
        let before = try await writers(cli, a)
        #expect(before == 3, "a's vector names a, b and c before the restores")

        try Self.copyDirectory(c, cli.path("backup"))
        let clock = ContinuousClock()
        let start = clock.now
        for round in 1...restores {
            try Self.copyDirectory(cli.path("backup"), c)
            try await cli.ok(["set", "--dir", c, "x", "from_c=\(round)"])
            try await cli.ok(sync)
        }
        print("restores: \(restores) restores of c, each with an edit and a sync, in \(clock.now - start)")
        // The backup held c's last write, so the first restore lost nothing and kept its writer.
        #expect(try await cli.waitForConvergence([a, b], timeout: .seconds(30)) != nil)
        let grown = try await writers(cli, a)
        #expect(grown == before + restores - 1, "one writer more per restore that lost a write")
        print("restores: a's and b's vectors name \(grown) writers before c's node folds them")

        let nodeC = try await NodeProcess(dir: c, port: ports[2], peers: [ports[0], ports[1]], extra: collect)
        defer { nodeC.stop() }
        let folding = clock.now
        var counts: [Int] = []
        _ = try await eventually(within: .seconds(60), every: .milliseconds(300)) {
            counts = try await [a, b, c].asyncMap { try await writers(cli, $0) }
            return counts == [before, before, before]
        }
        #expect(counts == [before, before, before], "the writers a, b and c name once c's node ran")
        print("restores: every vector back to \(before) writers \(clock.now - folding) after c's node started")
        #expect(try await cli.waitForConvergence([a, b, c], timeout: .seconds(30)) != nil)
        let shown = try JSON(parsing: try await cli.ok(["get", "--dir", a, "x", "--json"]))
        #expect(shown["fields"]?["from_c"] == .integer(Int64(restores)), "c's last edit is everywhere")
    }
}
