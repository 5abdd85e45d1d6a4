import Foundation
import LansyncCore
import LansyncJSON
import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Synchronization
import Testing

/// A `lansync node` running as its own process for the length of a test.
final class NodeProcess: Sendable {
    /// The node's process, started and reaped without Foundation's `Process` (``SpawnedChild``).
    let process: SpawnedChild
    let dir: String
    let port: Int
    let log: String

    /// Starts `lansync node --dir DIR --listen 127.0.0.1:PORT --peer ...`, and waits until it listens.
    convenience init(
        dir: String,
        port: Int,
        peers: [Int] = [],
        extra: [String] = [],
        environment: [String: String] = [:],
        binary: String = CLI.binary
    ) async throws {
        // Loopback tests never touch the host's mDNS: the lab tests run nodes in their own namespaces.
        try await self.init(
            dir: dir,
            port: port,
            arguments: ["--listen", "127.0.0.1:\(port)", "--no-mdns"] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] }
                // The API's default port (ours plus one) may be another test's node's: none
                // unless the test asks for one.
                + (extra.contains("--api") ? [] : ["--no-api"]) + extra,
            environment: environment,
            binary: binary
        )
    }

    /// Starts `lansync node --dir DIR ARGUMENTS...` (inside lab host `labHost` if given), and
    /// waits up to 20 s for it to listen (or to exit). The wait sleeps as a task, not as a thread:
    /// Swift's cooperative pool has one thread per core (two on CI), and hundreds of node starts
    /// each holding one for a fraction of a second stalled every other test's awaits meanwhile.
    init(
        dir: String,
        port: Int,
        arguments: [String],
        labHost: Int? = nil,
        waitForListening: Bool = true,
        command: String = "node",
        environment: [String: String] = [:],
        binary: String = CLI.binary
    ) async throws {
        self.dir = dir
        self.port = port
        log = dir + ".log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let command = [command, "--dir", dir] + arguments
        process = try SpawnedChild.spawn(
            labHost.map { ["/bin/bash"] + Lab.exec($0) + [binary] + command } ?? [binary] + command,
            standardOutput: nil,
            standardError: log,
            environment: labHost == nil ? environment : Lab.environment
        )
        guard waitForListening else { return }
        _ = await eventually(within: .seconds(20), every: .milliseconds(20)) {
            logText.contains("listening on") || !process.isRunning
        }
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Waits up to `seconds` for the log to contain every one of `needles`. The node writes a line
    /// after it acts (a key removed, a write overruled), so a test that has seen the act must
    /// still wait for the line.
    func logContains(_ needles: String..., within seconds: Double = 10) async -> Bool {
        await eventually(within: .seconds(seconds), every: .milliseconds(50)) {
            let text = logText
            return needles.allSatisfy { text.contains($0) }
        }
    }
    var pid: Int32 { process.pid }
    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then waits; returns the exit status (128 + the signal if one ended it).
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { Foundation.kill(process.pid, SIGTERM) }
        return process.wait()
    }

    func kill9() {
        if process.isRunning { Foundation.kill(process.pid, SIGKILL) }
        process.wait()
    }

    /// Resident memory in KiB, from /proc.
    var residentKiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    deinit {
        if process.isRunning {
            Foundation.kill(process.pid, SIGKILL)
            process.wait()
        }
    }
}

/// Free TCP ports on loopback, distinct, and none handed out before in this process.
func freePorts(_ n: Int) -> [Int] {
    // Every socket stays bound until all n ports are chosen (closing each at once let the kernel
    // hand the same port out twice: a node once dialled itself), and a port is never handed out
    // twice in one test process (tests run in parallel, each asking for its own).
    var sockets: [Int32] = []
    defer { for fd in sockets { close(fd) } }
    var ports: [Int] = []
    while ports.count < n {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        sockets.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        if handedOutPorts.withLock({ $0.insert(port).inserted }) { ports.append(port) }
    }
    return ports
}

/// Every port ``freePorts(_:)`` handed out in this process.
private let handedOutPorts = Mutex<Set<Int>>([])

extension CLI {
    /// `lansync status --json` of a directory, parsed.
    func status(_ dir: String) async throws -> JSON {
        try JSON(parsing: try await ok(["status", "--dir", dir, "--json"]))
    }

    /// What each directory's status says of convergence, one line each: its digest, version
    /// vector, and each peer's connection and what it lacks (for a failure message, when
    /// ``waitForConvergence(_:timeout:)`` gave up).
    func convergenceReport(_ dirs: [String]) async -> String {
        var lines: [String] = []
        for dir in dirs {
            guard let status = try? await self.status(dir) else {
                lines.append("\(dir): no status")
                continue
            }
            var peers: [String] = []
            if case .array(let list)? = status["peers"] {
                for peer in list {
                    peers.append(
                        "\(peer["name"]?.text ?? "?") connected=\(peer["connected"]?.text ?? "?") lacks=\(peer["lacks"]?.text ?? "?") receiving=\(peer["receiving"]?.text ?? "?") error=\(peer["last_error"]?.text ?? "?")"
                    )
                }
            }
            // The digest read afresh from the file, beside the one the node keeps (a kept
            // digest gone stale would show here).
            let file = (try? ReplicaStore.open(path: dir + "/replica.sqlite")).flatMap {
                try? ReplicaDigest.compute($0)
            }
            lines.append(
                "\(dir): digest \(status["digest"]?.text ?? "?") (file \(file ?? "?")) vector \(status["version_vector"]?.text ?? "?") peers [\(peers.joined(separator: "; "))]"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// Asks every directory's status, round after round, until they show the same digest and
    /// version vector; returns how long it took, or nil once a round begun after `timeout` still
    /// shows them apart (``eventually(within:every:_:)`` looks once more past its bound).
    /// Judging by a round begun before the deadline could compare answers taken a minute apart:
    /// CI once saw one `status` take most of the wait while the replicas had long converged, and
    /// the round compared it with answers from before. A `status` slower than five seconds is
    /// printed, since a command that slow is a problem of its own.
    func waitForConvergence(_ dirs: [String], timeout: Duration = .seconds(60)) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        let took: Duration? = try await eventually(within: timeout) { () async throws -> Duration? in
            var statuses: [JSON] = []
            for dir in dirs {
                let asked = clock.now
                statuses.append(try await status(dir))
                if clock.now - asked > .seconds(5) {
                    print("waitForConvergence: status of \(dir) took \(clock.now - asked)")
                }
            }
            let digests = Set(statuses.compactMap { $0["digest"] })
            let vectors = Set(statuses.compactMap { $0["version_vector"] })
            return digests.count == 1 && vectors.count == 1 ? clock.now - start : nil
        }
        if let took { return took }
        print("waitForConvergence gave up after \(clock.now - start):\n\(await convergenceReport(dirs))")
        return nil
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
