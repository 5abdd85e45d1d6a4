import BenchSQLite
import Foundation

extension Bench {
    /// W4: a converged cluster of N nodes, each with a replica of M items, exchanging
    /// anti-entropy rounds once a second and nothing else. Up to 8 nodes every node keeps a
    /// session with every other (a full mesh); past that each keeps its bounded view (5 to 8
    /// sessions, Docs/SCALE.md), so the cluster is measured as it runs: the sessions counted are
    /// the ones the nodes hold. Bytes come from the kernel's socket counters and CPU from /proc,
    /// so measuring costs the nodes nothing.
    func idle() throws {
        var replicas: [(Int, Replica)] = [(settings.smallItems, try smallReplicas.a)]
        if let bigPair {
            replicas.append((settings.items, bigPair.a))
        } else {
            report.skipped.append("W4 at M = \(settings.items.grouped): it reuses W1's replicas, and W1 did not run")
        }
        let interval = 1.0
        for (m, source) in replicas {
            for n in [2, 8, 16, 64] {
                let label = "W4 idle, M = \(m.grouped), \(n) nodes"
                var members = [source]
                for i in 1..<n { members.append(try lansync.copy(source, as: "w4-\(m)-\(i)")) }
                var nodes: [NodeProcess] = []
                defer { for node in nodes { node.stop() } }
                for member in members { nodes.append(try lansync.start(member, peers: nodes, antiEntropy: interval)) }
                try waitUntil("\(n) nodes to fill their views", timeout: 300, interval: 0.5) {
                    try members.allSatisfy { try Self.viewFilled(try $0.status(), nodes: n) }
                }
                try waitConverged(try members.map { try ReplicaProbe($0.dir) }, timeout: 300)
                sleep(seconds: 3)
                let sessions = try Self.sessions(of: members)
                var bytes: [Double] = []
                var cpu: [Double] = []
                let pids = nodes.map(\.child.pid)
                for _ in 0..<3 {
                    var sent = try SentOverWindow(pids: pids)
                    let cpu0 = nodes.map(\.cpuSeconds)
                    let t0 = now()
                    // Sampled four times a second, so that a session that closes in the window
                    // is counted up to its close (SentOverWindow).
                    while now() - t0 < settings.idleWindow {
                        sleep(seconds: 0.25)
                        try sent.sample()
                    }
                    let cpu1 = nodes.map(\.cpuSeconds)
                    let t1 = now()
                    let rounds = (t1 - t0) / interval
                    let connections = Double(max(sessions, 1))
                    bytes.append(Double(sent.total) / connections / rounds)
                    cpu.append(zip(cpu0, cpu1).reduce(0) { $0 + $1.1 - $1.0 } / Double(n) / rounds * 1000)
                }
                let perNode = Double(2 * sessions) / Double(n)
                report.add(
                    Figure(
                        label,
                        "bytes per round per connection (both ways)",
                        unit: "B",
                        samples: bytes,
                        note: "\(sessions) sessions, \(perNode.formatted(.number.precision(.fractionLength(1)))) a node"
                    )
                )
                report.add(
                    Figure(
                        label,
                        "CPU per node per round (with \(perNode.formatted(.number.precision(.fractionLength(1)))) sessions)",
                        unit: "ms",
                        samples: cpu,
                        note: "includes the node's own 500 ms change poll; rounds every \(Int(interval)) s"
                    )
                )
                nodes.forEach { $0.stop() }
                nodes = []
                for member in members.dropFirst() { try? FileManager.default.removeItem(atPath: member.dir) }
            }
        }
    }

    /// Whether a node's view is as full as it will get: every other node while the cluster is a
    /// full mesh, else the view's target (the sessions it dials towards; others may dial it too).
    static func viewFilled(_ status: [String: Any], nodes n: Int) -> Bool {
        let connected = ((status["peers"] as? [[String: Any]]) ?? []).filter { $0["connected"] as? Bool == true }
        let target = ((status["view"] as? [String: Any])?["target"] as? Int) ?? (n - 1)
        return connected.count >= min(n - 1, target)
    }

    /// The sessions the nodes hold: each counted once, by the pair of nodes it joins.
    static func sessions(of members: [Replica]) throws -> Int {
        var pairs = Set<[String]>()
        for member in members {
            let status = try member.status()
            guard let me = status["node_id"] as? String else { continue }
            for peer in (status["peers"] as? [[String: Any]]) ?? [] where peer["connected"] as? Bool == true {
                guard let other = peer["node_id"] as? String else { continue }
                pairs.insert([me, other].sorted())
            }
        }
        return pairs.count
    }
}
