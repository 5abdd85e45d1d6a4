import BenchSQLite
import Foundation

extension Bench {
    /// W2: K edits made on A while B's node is down, into replicas of M items; then A's node and
    /// B's node start and B catches up. Measures the bytes each way and the round trips of that
    /// session, which should depend on K and not on M.
    func incremental() throws {
        var pairs: [(Int, (a: Replica, b: Replica))] = [(settings.smallItems, try smallReplicas)]
        if let bigPair {
            pairs.append((settings.items, bigPair))
        } else {
            report.skipped.append("W2 at M = \(settings.items.grouped): it reuses W1's replicas, and W1 did not run")
        }
        var perEditBytes: [Int: [Int: Double]] = [:]  // K → M → median bytes A→B
        for (m, pair) in pairs {
            for k in settings.incrementalEdits {
                let label = "W2 incremental, M = \(m.grouped), K = \(k.grouped)"
                var sent: [Double] = []
                var back: [Double] = []
                var trips: [Double] = []
                var seconds: [Double] = []
                for r in 0..<settings.runs {
                    let edits = lansync.work + "/w2-edits.jsonl"
                    try Dataset(items: m).writeEdits(count: k, field: "f3", tag: "w2 r\(r) k\(k)", to: edits)
                    try pair.a.importFile(edits)
                    let a = try lansync.start(pair.a)
                    let probes = try [ReplicaProbe(pair.a.dir), ReplicaProbe(pair.b.dir)]
                    let start = now()
                    let b = try lansync.start(pair.b, peers: [a])
                    seconds.append(try waitConverged(probes, timeout: 600) - start)
                    let c = try a.settledCounters(
                        with: [pair.b],
                        keys: ["sent_bytes", "received_bytes", "round_trips_waited", "sent_updates"]
                    )[0]
                    b.stop()
                    a.stop()
                    guard c["sent_updates"]! >= k else {
                        throw BenchError("\(label): A sent \(c["sent_updates"]!) field states for \(k) edits")
                    }
                    sent.append(Double(c["sent_bytes"]!))
                    back.append(Double(c["received_bytes"]!))
                    trips.append(Double(1 + c["round_trips_waited"]!))
                }
                report.add(Figure(label, "bytes A→B", unit: "B", samples: sent))
                report.add(Figure(label, "bytes B→A", unit: "B", samples: back))
                report.add(Figure(label, "protocol round trips (hello + window waits)", unit: "", samples: trips))
                report.add(Figure(label, "time to catch up, from starting B's node", unit: "s", samples: seconds))
                perEditBytes[k, default: [:]][m] = median(sent)
            }
        }
        if pairs.count == 2 {
            for k in settings.incrementalEdits {
                guard let small = perEditBytes[k]?[settings.smallItems], let big = perEditBytes[k]?[settings.items]
                else { continue }
                report.comparisons.append(
                    Comparison(
                        what:
                            "W2 bytes A→B for K = \(k.grouped): M = \(settings.items.grouped) vs M = \(settings.smallItems.grouped)",
                        unit: "B",
                        lansync: big,
                        against: "M = \(settings.smallItems.grouped)",
                        other: small,
                        ratio: big / small,
                        meaning: "1 means the catch-up cost does not grow with the replica"
                    )
                )
            }
        }
    }
}
