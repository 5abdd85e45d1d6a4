import BenchSQLite
import Foundation

extension Bench {
    /// W3: A and B, apart, each edit the same `conflicts` fields to different values; then both
    /// nodes run until they agree. Every field is a true conflict each side must merge with its
    /// own edit (both values kept as siblings). Checks both replicas show that many conflicts.
    /// Returns the merges per second of each run.
    @discardableResult
    func conflicts() throws -> [Double] {
        let pair = try smallReplicas
        let n = settings.conflicts
        let label = "W3 conflicts, \(n.grouped) fields edited on both sides"
        var rates: [Double] = []
        var seconds: [Double] = []
        for r in 0..<settings.runs {
            let edits = lansync.work + "/w3-edits.jsonl"
            try Dataset(items: settings.smallItems).writeEdits(count: n, field: "f0", tag: "A r\(r)", to: edits)
            try pair.a.importFile(edits)
            try Dataset(items: settings.smallItems).writeEdits(count: n, field: "f0", tag: "B r\(r)", to: edits)
            try pair.b.importFile(edits)
            let a = try lansync.start(pair.a)
            let probes = try [ReplicaProbe(pair.a.dir), ReplicaProbe(pair.b.dir)]
            let start = now()
            let b = try lansync.start(pair.b, peers: [a])
            let elapsed = try waitConverged(probes, timeout: 600) - start
            b.stop()
            a.stop()
            for side in [pair.a, pair.b] {
                let shown = try side.status()["conflicts"] as? Int ?? -1
                guard shown >= n else {
                    throw BenchError("\(label): \(side.name) shows \(shown) conflicts, expected \(n)")
                }
            }
            seconds.append(elapsed)
            rates.append(Double(n) / elapsed)
        }
        report.add(Figure(label, "time until both agree, from starting B's node", unit: "s", samples: seconds))
        report.add(Figure(label, "merges per second (each node merges every field)", unit: "fields/s", samples: rates))
        return rates
    }
}
