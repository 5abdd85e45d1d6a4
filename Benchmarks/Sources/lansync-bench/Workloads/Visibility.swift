import BenchSQLite
import Foundation

extension Bench {
    /// W5: with both nodes running and connected, `lansync set` edits one field on A, a few
    /// hundred times, a few tens of milliseconds apart. For each edit the runner watches both
    /// replica files and takes the moment A's commit is visible and the moment B's commit of the
    /// same write is: the latency a user on B feels. Returns the latencies in milliseconds.
    @discardableResult
    func visibility() throws -> [Double] {
        let pair = try smallReplicas
        let a = try lansync.start(pair.a)
        defer { a.stop() }
        let b = try lansync.start(pair.b, peers: [a])
        defer { b.stop() }
        let probeA = try ReplicaProbe(pair.a.dir)
        let probeB = try ReplicaProbe(pair.b.dir)
        try waitConverged([probeA, probeB], timeout: 120)
        try waitUntil("B to connect to A", timeout: 30) {
            try pair.b.peer(pair.a.nodeID)?["connected"] as? Bool == true
        }
        sleep(seconds: 1)
        let node = pair.a.nodeID
        var latencies: [Double] = []
        var generator = SystemRandomNumberGenerator()
        for e in 0..<settings.visibilityEdits {
            let before = try probeA.counter(of: node)
            let item = Dataset.id(e * settings.smallItems / max(1, settings.visibilityEdits))
            let edit = try Child([lansync.binary, "set", "--dir", pair.a.dir, item, "f5=visible edit \(e)"])
            var committedOnA: (time: Double, counter: Int64)?
            var committedOnB: Double?
            let deadline = now() + 30
            while committedOnB == nil {
                let t = now()
                if committedOnA == nil {
                    let c = try probeA.counter(of: node)
                    if c > before { committedOnA = (t, c) }
                }
                if let onA = committedOnA, try probeB.counter(of: node) >= onA.counter { committedOnB = now() }
                if t > deadline { throw BenchError("W5: edit \(e) did not reach B within 30 s") }
                if committedOnB == nil { sleep(seconds: 0.00005) }
            }
            guard edit.wait() == 0 else { throw BenchError("W5: lansync set failed on edit \(e)") }
            latencies.append((committedOnB! - committedOnA!.time) * 1000)
            sleep(seconds: Double.random(in: 0.01...0.03, using: &generator))
        }
        let label = "W5 edit-to-visibility, \(latencies.count) edits"
        report.add(
            Figure(
                label,
                "A's commit → B's commit, p50 (spread: p99)",
                unit: "ms",
                samples: latencies,
                percentiles: true,
                note: "observed by polling both SQLite files every ~50 µs"
            )
        )
        return latencies
    }
}
