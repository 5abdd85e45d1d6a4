import BenchSQLite
import Foundation

extension Bench {
    /// W4: a converged cluster of N nodes (all connected to all), each with a replica of M items,
    /// exchanging anti-entropy rounds once a second and nothing else. Bytes come from the kernel's
    /// socket counters and CPU from /proc, so measuring costs the nodes nothing.
    func idle() throws {
        var replicas: [(Int, Replica)] = [(settings.smallItems, try smallReplicas.a)]
        if let bigPair {
            replicas.append((settings.items, bigPair.a))
        } else {
            report.skipped.append("W4 at M = \(settings.items.grouped): it reuses W1's replicas, and W1 did not run")
        }
        let interval = 1.0
        for (m, source) in replicas {
            for n in [2, 8, 16] {
                let label = "W4 idle, M = \(m.grouped), \(n) nodes"
                var members = [source]
                for i in 1..<n { members.append(try lansync.copy(source, as: "w4-\(m)-\(i)")) }
                var nodes: [NodeProcess] = []
                defer { for node in nodes { node.stop() } }
                for member in members { nodes.append(try lansync.start(member, peers: nodes, antiEntropy: interval)) }
                try waitUntil("\(n) nodes to connect to each other", timeout: 120, interval: 0.5) {
                    try members.allSatisfy { m in
                        ((try m.status()["peers"] as? [[String: Any]]) ?? []).filter {
                            $0["connected"] as? Bool == true
                        }.count == n - 1
                    }
                }
                try waitConverged(try members.map { try ReplicaProbe($0.dir) }, timeout: 120)
                sleep(seconds: 3)
                var bytes: [Double] = []
                var cpu: [Double] = []
                let pids = nodes.map(\.child.pid)
                for _ in 0..<3 {
                    let sent0 = try SocketStats.bytesSent(by: pids)
                    let cpu0 = nodes.map(\.cpuSeconds)
                    let t0 = now()
                    sleep(seconds: settings.idleWindow)
                    let sent1 = try SocketStats.bytesSent(by: pids)
                    let cpu1 = nodes.map(\.cpuSeconds)
                    let t1 = now()
                    let rounds = (t1 - t0) / interval
                    let connections = Double(n * (n - 1) / 2)
                    let totalSent = pids.reduce(0) { $0 + (sent1[$1] ?? 0) - (sent0[$1] ?? 0) }
                    bytes.append(Double(totalSent) / connections / rounds)
                    cpu.append(zip(cpu0, cpu1).reduce(0) { $0 + $1.1 - $1.0 } / Double(n) / rounds * 1000)
                }
                report.add(Figure(label, "bytes per round per connection (both ways)", unit: "B", samples: bytes))
                report.add(
                    Figure(
                        label,
                        "CPU per node per round (with \(n - 1) peers)",
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
}
