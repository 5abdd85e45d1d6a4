import BenchSQLite
import Foundation

/// What one invocation measures and at what size.
struct Settings {
    var runs: Int
    /// W1's size, and the larger replica of W2 and W4.
    var items: Int
    /// The smaller replica of W2 and W4, and the replicas of W3 and W5.
    var smallItems: Int
    var conflicts: Int
    var incrementalEdits: [Int]
    var visibilityEdits: Int
    var syncthingItems: Int
    var syncthingEdits: Int
    var idleWindow: Double
    var workloads: Set<String>
    var repo: String

    func wants(_ w: String) -> Bool { workloads.contains(w) }
}

/// One benchmark run: the cluster it builds, the replicas workloads hand on to each other, and
/// the report they fill.
final class Bench {
    let settings: Settings
    let lansync: Lansync
    var report: Report
    /// Two synced replicas of `settings.items` items (from W1) and of `settings.smallItems`.
    var bigPair: (a: Replica, b: Replica)?
    var smallPair: (a: Replica, b: Replica)?
    private var sectionStarted: Double?

    init(settings: Settings, lansync: Lansync, report: Report) {
        self.settings = settings
        self.lansync = lansync
        self.report = report
    }

    /// Prints a section's title, and how long the previous one took.
    func section(_ title: String) {
        if let sectionStarted { print("    (\(Int((now() - sectionStarted).rounded())) s)") }
        sectionStarted = now()
        print("==> \(title)")
        fflushOut()
    }

    /// A synced pair of `items` items: the A side imports them, a node on B pulls them.
    func makePair(items: Int, name: String) throws -> (a: Replica, b: Replica) {
        let data = Dataset(items: items)
        let a = try lansync.makeReplica(name + "-a")
        let b = try lansync.makeReplica(name + "-b")
        let input = lansync.work + "/" + name + ".jsonl"
        try data.writeJSONLines(to: input)
        try a.importFile(input)
        try syncOnce(a, b)
        return (a, b)
    }

    /// Runs both nodes until their replicas agree, then stops them.
    func syncOnce(_ a: Replica, _ b: Replica, timeout: Double = 900) throws {
        let na = try lansync.start(a)
        defer { na.stop() }
        let nb = try lansync.start(b, peers: [na])
        defer { nb.stop() }
        try waitConverged([ReplicaProbe(a.dir), ReplicaProbe(b.dir)], timeout: timeout, interval: 0.05)
    }

    var smallReplicas: (a: Replica, b: Replica) {
        get throws {
            if let smallPair { return smallPair }
            let pair = try makePair(items: settings.smallItems, name: "small")
            smallPair = pair
            return pair
        }
    }
}

extension Int {
    /// 10000 → "10,000".
    var grouped: String {
        let s = String(self)
        var out = ""
        for (i, c) in s.enumerated() {
            if i > 0, (s.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return out
    }
}
