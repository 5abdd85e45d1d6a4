import BenchProcess
import BenchSQLite
import Foundation
import Glibc

/// Seconds on the monotonic clock.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleep(seconds: Double) {
    guard seconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
}

/// Polls `condition` every `interval` seconds until it holds; throws after `timeout` seconds.
func waitUntil(
    _ what: @autoclosure () -> String,
    timeout: Double,
    interval: Double = 0.02,
    _ condition: () throws -> Bool
) throws {
    let deadline = now() + timeout
    while try !condition() {
        if now() > deadline { throw BenchError("timed out after \(Int(timeout)) s waiting for \(what())") }
        sleep(seconds: interval)
    }
}

/// What /proc says about a process and, optionally, the processes it started.
enum ProcessStats {
    /// Peak resident memory (VmHWM) in bytes; with `tree`, the largest over the process and its
    /// descendants (Syncthing runs its work in a child of the process we start).
    static func peakRSS(_ pid: pid_t, tree: Bool = false) -> Int {
        var peak = 0
        for p in tree ? withDescendants(pid) : [pid] {
            guard let text = try? String(contentsOfFile: "/proc/\(p)/status", encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            else { continue }
            peak = max(peak, kib * 1024)
        }
        return peak
    }

    /// User plus system CPU time in seconds used so far by the process and its descendants.
    static func cpuSeconds(_ pid: pid_t, tree: Bool = false) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for p in tree ? withDescendants(pid) : [pid] {
            guard let text = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8),
                let close = text.lastIndex(of: ")")
            else { continue }
            // Fields after "(comm)": state is field 3, utime 14, stime 15.
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            total += (user + system) / ticks
        }
        return total
    }

    /// CPU time in seconds of the process's live threads, to the nanosecond (``ProcessFigures``).
    static func preciseCPUSeconds(_ pid: pid_t) -> Double { ProcessFigures.cpuSeconds(pid) }

    static func withDescendants(_ pid: pid_t) -> [pid_t] {
        var all = [pid]
        var i = 0
        while i < all.count {
            let p = all[i]
            i += 1
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(p)/task")) ?? []
            for t in tasks {
                let children = (try? String(contentsOfFile: "/proc/\(p)/task/\(t)/children", encoding: .utf8)) ?? ""
                all += children.split(separator: " ").compactMap { pid_t($0) }
            }
        }
        return all
    }
}

/// The machine the figures come from, printed with every table.
struct MachineInfo: Codable {
    var cpu: String
    var cores: Int
    var memoryGiB: Int
    var kernel: String
    var os: String

    static func current() -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces) }
            ?? "unknown"
        var info = utsname()
        uname(&info)
        let release = withUnsafeBytes(of: &info.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let osRelease = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let pretty =
            osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            ?? "Linux"
        return MachineInfo(
            cpu: model,
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryGiB: Int((Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824).rounded()),
            kernel: release,
            os: pretty
        )
    }

    var line: String { "\(cpu), \(cores) cores, \(memoryGiB) GiB, \(os), Linux \(kernel)" }
}

/// TCP bytes sent by processes, as the kernel counts them per socket (`ss -tinp`): read without
/// asking the processes anything, so measuring costs them no CPU.
enum SocketStats {
    /// Each established TCP connection of `pids` (its owner and its two ends) → bytes sent on it.
    static func bytesSent(by pids: [pid_t]) throws -> [String: Int] {
        let text = try run(["ss", "-tinpH", "state", "established"])
        var sent: [String: Int] = [:]
        var connection: String?
        for line in text.split(separator: "\n") {
            if !line.hasPrefix("\t") && !line.hasPrefix(" ") {
                // "Recv-Q Send-Q LOCAL PEER users:((..,pid=N,..))": the two ends name the socket.
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                let owner = line.range(of: "pid=").flatMap { r in pid_t(line[r.upperBound...].prefix { $0.isNumber }) }
                connection =
                    columns.count >= 4 && owner.map(pids.contains) == true
                    ? "\(owner!) \(columns[2]) \(columns[3])" : nil
            } else if let key = connection, let r = line.range(of: "bytes_sent:"),
                let n = Int(line[r.upperBound...].prefix { $0.isNumber })
            {
                sent[key] = n
            }
        }
        return sent
    }
}

/// The bytes processes send over a window, counted per connection: one that was open at the
/// window's start counts from what it had sent then, one opened during it counts whole, and one
/// that closes during it counts up to its last sample (connections are sampled every `every`).
/// Summing each process's connections at the window's two ends instead made a connection that
/// closed in between subtract all it had ever sent: W4 at 64 nodes, where sessions outside the
/// view open and close every few rounds, showed negative bytes per round (2026-12-07). A
/// connection opened and closed between two samples is not seen: the figure is a lower bound.
struct SentOverWindow {
    let pids: [pid_t]
    private var start: [String: Int] = [:]
    private var latest: [String: Int] = [:]

    init(pids: [pid_t]) throws {
        self.pids = pids
        start = try SocketStats.bytesSent(by: pids)
        latest = start
    }

    mutating func sample() throws {
        for (key, bytes) in try SocketStats.bytesSent(by: pids) { latest[key] = max(latest[key] ?? 0, bytes) }
    }

    var total: Int { latest.reduce(0) { $0 + max(0, $1.value - (start[$1.key] ?? 0)) } }
}
