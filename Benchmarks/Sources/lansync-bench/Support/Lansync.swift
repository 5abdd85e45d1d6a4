import BenchSQLite
import Foundation
import Glibc

/// The release `lansync` binary, driven as a user drives it, and the scratch directory where the
/// runner makes its cluster: one cluster secret, any number of replicas.
final class Lansync {
    let binary: String
    let work: String
    let clusterFile: String
    private var nextPort: Int

    init(binary: String, work: String, basePort: Int) throws {
        self.binary = binary
        self.work = work
        nextPort = basePort
        clusterFile = work + "/cluster.pem"
        try run([binary, "cluster", "create", clusterFile])
    }

    @discardableResult
    func cli(_ arguments: [String], stdin: String? = nil) throws -> String {
        try run([binary] + arguments, stdin: stdin)
    }

    var version: String { ((try? cli(["--version"])) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines) }

    /// `--no-api` where the binary has a local API (an older one, compared against, has none).
    lazy var noAPI: [String] = ((try? cli(["node", "--help"])) ?? "").contains("--no-api") ? ["--no-api"] : []

    /// A new, empty replica in `work/name`.
    func makeReplica(_ name: String) throws -> Replica {
        let dir = work + "/" + name
        try? FileManager.default.removeItem(atPath: dir)
        try cli(["init", "--dir", dir, "--cluster", clusterFile, "--name", name])
        return try Replica(lansync: self, dir: dir)
    }

    /// A copy of `replica`'s directory (taken while no node runs on it): lansync notices the copy
    /// on first use and gives it a node identity of its own, as it would on another machine.
    func copy(_ replica: Replica, as name: String) throws -> Replica {
        let dir = work + "/" + name
        try? FileManager.default.removeItem(atPath: dir)
        try run(["cp", "-a", replica.dir, dir])
        unlink(dir + "/control.sock")
        return try Replica(lansync: self, dir: dir)
    }

    func port() -> Int {
        defer { nextPort += 1 }
        return nextPort
    }

    /// Starts a node on `replica` listening on a fresh loopback port, with static peers and no
    /// mDNS, and waits until its log says it listens. (Not by asking `status`: that computes the
    /// replica's digest, which takes most of a second at 100,000 items and would be timed too.)
    func start(
        _ replica: Replica,
        peers: [NodeProcess] = [],
        antiEntropy: Double? = nil,
        api: Bool = false
    ) throws -> NodeProcess {
        let port = port()
        // No local API unless asked for: its default port (ours plus one) is the next node's.
        let apiPort = api ? self.port() : nil
        var args = [binary, "node", "--dir", replica.dir, "--listen", "127.0.0.1:\(port)", "--no-mdns"]
        args += apiPort.map { ["--api", "127.0.0.1:\($0)"] } ?? noAPI
        for p in peers.map(\.port) { args += ["--peer", "127.0.0.1:\(p)"] }
        if let antiEntropy { args += ["--anti-entropy", String(antiEntropy)] }
        let log = replica.dir + ".log"
        func listening() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(
                separatedBy: "listening on 127.0.0.1:\(port)"
            ).count - 1
        }
        let before = listening()
        let child = try Child(args, stderr: log)
        let node = NodeProcess(child: child, replica: replica, port: port, apiPort: apiPort)
        try waitUntil("\(replica.name)'s node to start (see \(log))", timeout: 30, interval: 0.005) {
            guard child.isRunning else { throw BenchError("\(replica.name)'s node exited; see \(log)") }
            return listening() > before
        }
        return node
    }
}

/// One replica directory.
struct Replica {
    let lansync: Lansync
    let dir: String
    let name: String
    /// Read on first use, after any copy was noticed.
    let nodeID: String

    init(lansync: Lansync, dir: String) throws {
        self.lansync = lansync
        self.dir = dir
        name = (dir as NSString).lastPathComponent
        guard let id = try Self.status(lansync, dir)["node_id"] as? String else {
            throw BenchError("no node_id in status of \(dir)")
        }
        nodeID = id
    }

    func status() throws -> [String: Any] { try Self.status(lansync, dir) }

    /// The status entry of the peer with `nodeID`, if this replica's node knows it.
    func peer(_ nodeID: String) throws -> [String: Any]? {
        (try status()["peers"] as? [[String: Any]])?.first { $0["node_id"] as? String == nodeID }
    }

    private static func status(_ lansync: Lansync, _ dir: String) throws -> [String: Any] {
        let text = try lansync.cli(["status", "--dir", dir, "--json"])
        guard let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw BenchError("status --json of \(dir) is not an object")
        }
        return json
    }

    func importFile(_ path: String) throws { try lansync.cli(["import", "--dir", dir, path]) }

    /// Imports `path` and returns the import's peak resident memory in bytes.
    func importFileMeasuringMemory(_ path: String) throws -> Int {
        let child = try Child([lansync.binary, "import", "--dir", dir, path])
        // VmHWM, sampled while it runs: a spawned child's ru_maxrss can report the parent's size
        // from before its exec (posix_spawn shares the parent's memory until then).
        var peak = 0
        while child.isRunning {
            peak = max(peak, ProcessStats.peakRSS(child.pid))
            sleep(seconds: 0.01)
        }
        guard child.wait() == 0 else { throw BenchError("lansync import into \(dir) failed") }
        return peak
    }

    /// The replica file's size in bytes after a checkpoint has emptied its WAL.
    func fileSizeAfterCheckpoint() throws -> Int {
        let db = try SQLite(dir + "/replica.sqlite")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return (try? FileManager.default.attributesOfItem(atPath: dir + "/replica.sqlite")[.size] as? Int) ?? 0
    }

    var digest: String { get throws { try status()["digest"] as? String ?? "" } }
}

/// A running `lansync node`.
final class NodeProcess {
    let child: Child
    let replica: Replica
    let port: Int
    /// Where its local API listens, when it was started with one.
    let apiPort: Int?

    init(child: Child, replica: Replica, port: Int, apiPort: Int? = nil) {
        self.child = child
        self.replica = replica
        self.port = port
        self.apiPort = apiPort
    }

    var peakRSS: Int { ProcessStats.peakRSS(child.pid) }
    var cpuSeconds: Double { ProcessStats.preciseCPUSeconds(child.pid) }

    /// A counter of this node's current session with `peer` (`sent_bytes`, `round_trips_waited`…).
    func counter(_ key: String, with peer: Replica) throws -> Int {
        guard let entry = try replica.peer(peer.nodeID) else {
            throw BenchError("\(replica.name) does not know \(peer.name)")
        }
        return entry[key] as? Int ?? 0
    }

    /// Waits until the session counters with every peer have stopped moving (the node reports
    /// them on its next event or once-a-second tick), then returns them.
    func settledCounters(with peers: [Replica], keys: [String]) throws -> [[String: Int]] {
        var last: [[String: Int]] = []
        for _ in 0..<40 {
            sleep(seconds: 0.6)
            let current = try peers.map { p in
                try Dictionary(uniqueKeysWithValues: keys.map { ($0, try counter($0, with: p)) })
            }
            if current == last { return current }
            last = current
        }
        return last
    }

    func stop() { child.stop() }
}

/// Waits until every replica holds the same version vector (each has every write the others
/// have); returns the time it happened.
@discardableResult
func waitConverged(_ probes: [ReplicaProbe], timeout: Double, interval: Double = 0.01) throws -> Double {
    try waitUntil("the replicas to converge", timeout: timeout, interval: interval) {
        let first = try probes[0].versionVector()
        return try probes.dropFirst().allSatisfy { try $0.versionVector() == first }
    }
    return now()
}
