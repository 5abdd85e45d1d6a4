import Foundation
import LansyncJSON
import Testing

/// Issue 35, part 3, on the real binary with no mDNS: members pass on where they last reached
/// each other, so a node that knows one member finds the others.
@Suite(.serialized) struct GossipTests {
    /// The peers a status lists as connected, by node id, with how each was found.
    func connected(_ cli: CLI, _ dir: String) async throws -> [String: String] {
        guard case .array(let peers)? = try await cli.status(dir)["peers"] else { return [:] }
        var found: [String: String] = [:]
        for peer in peers where peer["connected"] == .bool(true) {
            guard case .string(let id)? = peer["node_id"] else { continue }
            if case .string(let source)? = peer["source"] { found[id] = source } else { found[id] = "" }
        }
        return found
    }

    func nodeID(_ cli: CLI, _ dir: String) async throws -> String {
        if case .string(let id)? = try await cli.status(dir)["node_id"] { return id }
        return ""
    }

    /// a dials b; c knows only a. c learns from a's hello where a reached b, dials b itself (its
    /// status says the address was passed on), and when a stops, an edit on b still reaches c.
    @Test func aNodeThatKnowsOneMemberFindsTheOthers() async throws {
        let cli = CLI("gossip")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b", "c"])
        let (a, b, c) = (cli.path("a"), cli.path("b"), cli.path("c"))
        let ports = freePorts(3)
        let nodeB = try await NodeProcess(dir: b, port: ports[1])
        defer { nodeB.stop() }
        let nodeA = try await NodeProcess(dir: a, port: ports[0], peers: [ports[1]])
        defer { nodeA.stop() }
        #expect(try await cli.waitForConvergence([a, b], timeout: .seconds(30)) != nil)
        let idB = try await nodeID(cli, b)
        let idC = try await nodeID(cli, c)
        // a passes on where it reached b only once it holds a session with b.
        _ = try await eventually(within: .seconds(30)) { try await connected(cli, a)[idB] != nil }

        let clock = ContinuousClock()
        let nodeC = try await NodeProcess(dir: c, port: ports[2], peers: [ports[0]])
        defer { nodeC.stop() }
        let start = clock.now
        var peersOfC: [String: String] = [:]
        _ = try await eventually(within: .seconds(30)) {
            peersOfC = try await connected(cli, c)
            return peersOfC[idB] != nil
        }
        #expect(peersOfC[idB] == "gossip", "c reached b at the address a passed on: \(peersOfC)\n\(nodeC.logText)")
        print("gossip: c had a session with b \(clock.now - start) after it started, knowing only a")
        #expect(try await connected(cli, b)[idC] != nil, "b holds the session c opened")

        #expect(nodeA.stop() == 0)
        try await cli.ok(["add", "--dir", b, "--id", "after-a", "n=1"])
        #expect(try await cli.waitForConvergence([b, c], timeout: .seconds(30)) != nil)
        #expect(try await cli.ok(["get", "--dir", c, "after-a", "--json"]).contains("\"n\""))
    }
}
