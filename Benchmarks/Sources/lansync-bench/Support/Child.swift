import BenchSQLite
import Foundation
import Glibc

/// A child process started with `posix_spawnp`: the runner needs its pid (to read its peak
/// memory and CPU time in /proc) and exact control over when it is signalled and reaped, which
/// Foundation's `Process` does not give on Linux without a run loop.
final class Child {
    let pid: pid_t
    let command: String
    private var exitStatus: Int32?

    /// Starts `arguments` (looked up in PATH) with stdin from /dev/null and stdout/stderr
    /// appended to the given files (or /dev/null).
    init(
        _ arguments: [String],
        stdout: String? = nil,
        stderr: String? = nil,
        environment: [String: String] = [:]
    ) throws {
        command = arguments.joined(separator: " ")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let envStrings = env.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let rc = withCStrings(arguments) { argv in
            withCStrings(envStrings) { envp in
                posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
            }
        }
        guard rc == 0 else { throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// Whether the process has not been reaped yet (and reaps it if it just exited).
    var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            exitStatus = status
            return false
        }
        return true
    }

    func signal(_ sig: Int32) { if isRunning { kill(pid, sig) } }

    /// Waits for the process to exit; returns its exit code (128 + signal when killed).
    @discardableResult
    func wait() -> Int32 {
        if exitStatus == nil {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1, errno == EINTR {}
            exitStatus = status
        }
        let s = exitStatus!
        return (s & 0x7f) == 0 ? (s >> 8) & 0xff : 128 + (s & 0x7f)
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds.
    func stop(grace: Double = 10) {
        signal(SIGTERM)
        let deadline = now() + grace
        while isRunning, now() < deadline { sleep(seconds: 0.02) }
        signal(SIGKILL)
        wait()
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var s: Int32 = 0
            waitpid(pid, &s, 0)
        }
    }
}

/// Runs a command to completion and returns its standard output; throws with its standard error
/// when it exits non-zero.
@discardableResult
func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> String {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
        "lansync-bench-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    )
    let out = scratch.path + ".out"
    let err = scratch.path + ".err"
    defer {
        unlink(out)
        unlink(err)
    }
    let child: Child
    if let stdin {
        child = try Child(
            ["sh", "-c", "exec \"$@\" < \"$0\"", stdin] + arguments,
            stdout: out,
            stderr: err,
            environment: environment
        )
    } else {
        child = try Child(arguments, stdout: out, stderr: err, environment: environment)
    }
    let status = child.wait()
    let output = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    guard status == 0 else {
        let error = ((try? String(contentsOfFile: err, encoding: .utf8)) ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        throw BenchError("\(arguments.joined(separator: " ")) exited \(status): \(error)")
    }
    return output
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
