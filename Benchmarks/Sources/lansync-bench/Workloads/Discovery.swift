import BenchSQLite
import Foundation

extension Bench {
    /// W6: in the mDNS lab (`scripts/lab.sh`: four hosts in network namespaces, each with its own
    /// avahi-daemon, never the machine's own network), three nodes run with no configured peers.
    /// Each run starts a fourth node and times until all three show a connected session with it
    /// (found over mDNS, then dialled); then stops it and waits until they notice. Measured on
    /// an IPv4-only lab, an IPv6-only one and a dual-stack one.
    func discovery() throws {
        let script = settings.repo + "/scripts/lab.sh"
        let environment = ["LAB_PREFIX": "lsb"]
        let checkOutput = lansync.work + "/lab-check.txt"
        if try Child([script, "check"], stdout: checkOutput, environment: environment).wait() != 0 {
            let reason = ((try? String(contentsOfFile: checkOutput, encoding: .utf8)) ?? "").trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            report.skipped.append("W6 discovery: the mDNS lab cannot run here: \(reason)")
            return
        }
        // Each family in turn, every node listening with the default (`[::]:7420`): IPv4 alone
        // (the figure's name since the first round), IPv6 alone, both.
        for (family, spec) in [
            ("", "a4,a4,a4,a4"), (", IPv6 only", "a6,a6,a6,a6"), (", dual stack", "a46,a46,a46,a46"),
        ] {
            try discovery(family: family, spec: spec, script: script, environment: environment)
        }
    }

    private func discovery(family: String, spec: String, script: String, environment: [String: String]) throws {
        try run([script, "up", "4", spec], environment: environment)
        defer { _ = try? run([script, "down"], environment: environment) }
        let tag = family.isEmpty ? "v4" : family.contains("dual") ? "dual" : "v6"
        let hosts = try (1...4).map { try lansync.makeReplica("w6-\(tag)-host\($0)") }
        func startNode(_ i: Int) throws -> Child {
            try Child(
                [script, "exec", String(i), lansync.binary, "node", "--dir", hosts[i - 1].dir],
                stderr: hosts[i - 1].dir + ".log",
                environment: environment
            )
        }
        let running = try (1...3).map(startNode)
        defer { running.forEach { $0.stop() } }
        let three = Array(hosts[0..<3])
        try waitUntil("the first three lab nodes to find each other", timeout: 60, interval: 0.1) {
            try three.allSatisfy { h in
                try three.allSatisfy { other in
                    try other.nodeID == h.nodeID || h.peer(other.nodeID)?["connected"] as? Bool == true
                }
            }
        }
        let fourth = hosts[3]
        var seen: [Double] = []
        for r in 0..<max(settings.runs, 5) {
            let start = now()
            let node = try startNode(4)
            try waitUntil("the three nodes to see the fourth (run \(r + 1))", timeout: 60, interval: 0.005) {
                try connected(three, to: fourth).allSatisfy { $0 }
            }
            seen.append(now() - start)
            node.stop()
            try waitUntil("the three nodes to notice the fourth left", timeout: 60, interval: 0.1) {
                try connected(three, to: fourth).allSatisfy { !$0 }
            }
            sleep(seconds: 1)
        }
        report.add(
            Figure(
                "W6 discovery (mDNS lab, 4 hosts\(family))",
                "node start → all 3 peers connected to it",
                unit: "s",
                samples: seen
            )
        )
    }

    /// Asks every replica's node at once (one `status` process each) whether it has a connected
    /// session with `peer`.
    private func connected(_ replicas: [Replica], to peer: Replica) throws -> [Bool] {
        let outputs = replicas.map { lansync.work + "/\($0.name).status" }
        let children = try zip(replicas, outputs).map { r, out in
            unlink(out)
            return try Child([lansync.binary, "status", "--dir", r.dir, "--json"], stdout: out)
        }
        return zip(children, outputs).map { child, out in
            child.wait()
            guard let data = FileManager.default.contents(atPath: out),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let peers = json["peers"] as? [[String: Any]]
            else { return false }
            return peers.contains { $0["node_id"] as? String == peer.nodeID && $0["connected"] as? Bool == true }
        }
    }
}
