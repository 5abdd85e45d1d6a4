import Foundation
import LansyncJSON
import Testing

/// Past a full mesh (issue 33, Docs/SCALE.md), with real processes on loopback.
@Suite(.serialized) struct ScaleTests {
    /// Twelve nodes, each told only of the one started before it: members pass each other on,
    /// and once a node knows of more than eight it keeps a bounded view (at most 5 + 3 sessions,
    /// where the mesh would hold 11), yet edits on both ends reach every replica.
    @Test func pastEightMembersEachNodeKeepsABoundedView() async throws {
        let cli = CLI("scale-view")
        defer { cli.cleanUp() }
        let names = (0..<12).map { "n\($0)" }
        try await cli.cluster(names)
        try await cli.ok(["add", "--dir", cli.path("n0"), "--id", "first", "v=1"])
        let p = freePorts(names.count)
        var nodes: [NodeProcess] = []
        defer { for node in nodes { node.stop() } }
        for i in names.indices {
            nodes.append(try await NodeProcess(dir: cli.path(names[i]), port: p[i], peers: i == 0 ? [] : [p[i - 1]]))
        }
        let dirs = names.map(cli.path)
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(120)) != nil)
        try await cli.ok(["set", "--dir", cli.path("n11"), "first", "v=2"])
        #expect(try await cli.waitForConvergence(dirs, timeout: .seconds(60)) != nil)
        #expect(try await cli.ok(["get", "--dir", cli.path("n0"), "first", "--json"]).contains(#""v":2"#))
        // Let the views settle (most nodes keep a bounded view, none holds more than its bound),
        // then count each node's sessions. (A look asks twelve nodes: a second between looks.)
        _ = try await eventually(every: .seconds(1)) {
            var settled = 0
            for dir in dirs {
                let view = try await cli.status(dir)["view"]
                guard case .array(let active)? = view?["active"], active.count <= 8 else { return false }
                if view?["mode"] == .string("bounded") { settled += 1 }
            }
            return settled >= names.count / 2
        }
        var counts: [Int] = []
        var bounded = 0
        for dir in dirs {
            let status = try await cli.status(dir)
            guard case .array(let peers)? = status["peers"] else {
                Issue.record("no peers in \(status.text)")
                continue
            }
            counts.append(peers.filter { $0["connected"] == .bool(true) }.count)
            guard case .array(let active)? = status["view"]?["active"] else {
                Issue.record("no view in \(status.text)")
                continue
            }
            // A node counts itself past a full mesh once it has heard of more than 8 members
            // (those it knows, and those its peers' hellos report): most have by now.
            if status["view"]?["mode"] == .string("bounded") { bounded += 1 }
            #expect(active.count <= 8 && active.allSatisfy { $0["reason"] != nil }, "\(status.text)")
        }
        #expect(bounded >= names.count / 2, "\(bounded) of \(names.count) nodes keep a bounded view")
        // A node's sessions can pass its view's bound by one for a moment: a peer dials it while
        // it prunes another (CI on b215bc7 saw 9 once). The bound must hold once that settles.
        if !counts.allSatisfy({ $0 >= 1 && $0 <= 8 }) {
            _ = try await eventually(every: .seconds(1)) {
                var again: [Int] = []
                for dir in dirs {
                    guard case .array(let peers)? = try await cli.status(dir)["peers"] else { continue }
                    again.append(peers.filter { $0["connected"] == .bool(true) }.count)
                }
                print("sessions per node, again: \(again)")
                counts = again
                return counts.allSatisfy { $0 >= 1 && $0 <= 8 }
            }
        }
        print("sessions per node: \(counts); \(bounded) bounded views")
        #expect(counts.allSatisfy { $0 >= 1 && $0 <= 8 }, "sessions per node \(counts)\n\(nodes.map(\.logText))")
    }
}
