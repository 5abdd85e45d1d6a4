import Foundation

/// A process's CPU time and memory as Linux's /proc tells them, for the runners that measure the
/// release `lansync` they start (and themselves).
public enum ProcessFigures {
    /// CPU time in seconds of the process's live threads, to the nanosecond
    /// (/proc/PID/task/*/schedstat), where /proc/PID/stat counts in 10 ms ticks.
    public static func cpuSeconds(_ pid: pid_t) -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var nanos = 0.0
        for t in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
                let first = text.split(separator: " ").first, let n = Double(first)
            else { continue }
            nanos += n
        }
        return nanos / 1e9
    }

    /// A `/proc/PID/status` figure given in kB (`VmRSS:`, `VmHWM:`), in bytes; 0 if not there.
    public static func status(_ pid: pid_t, _ key: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024
    }
}
