import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid` on its own pid, holding
/// no descriptor of this process but its standard ones.
///
/// Foundation's `Process` sees a child end when a socket it shares with the child closes. A child
/// started at the same moment by another thread can inherit that socket and hold it open for as
/// long as it runs: in a CI run on ef4bb31 a `chown` and a `pg_isready` were never seen to end (and
/// a node stayed a zombie), and their `waitUntilExit`, on both threads of the cooperative pool,
/// hung the suite. The tests' nodes, PostgreSQL servers and PostgreSQL's programs are started this
/// way instead: they hold no one else's socket, and their own end is seen by `waitpid`.
public final class SpawnedChild: Sendable {
    public let pid: Int32
    /// The exit status once it was reaped (128 + the signal if one ended it).
    private let ended = Mutex<Int32?>(nil)

    private init(pid: Int32) { self.pid = pid }

    /// Starts `arguments` (the first is the program's path) in `/`, its standard output and error
    /// appended to the file `output`.
    static func spawn(_ arguments: [String], output: String) throws -> SpawnedChild {
        // `env -C /`: the programs look for files relative to the working directory, and nobody
        // cannot read root's.
        try spawn(["/usr/bin/env", "-C", "/"] + arguments, standardOutput: output, standardError: output)
    }

    /// Starts `arguments` (the first is the program's path), its standard output and error appended
    /// to the files named (nil: /dev/null), with `environment` added to this process's.
    public static func spawn(
        _ arguments: [String],
        standardOutput: String?,
        standardError: String?,
        environment: [String: String] = [:]
    ) throws -> SpawnedChild {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Nothing of this process's beyond 0, 1 and 2 (other children's sockets included).
        _ = Self.closeFrom?(&actions, 3)
        for (descriptor, path) in [(Int32(1), standardOutput), (2, standardError)] {
            if let path, path == standardOutput, descriptor == 2 {
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            } else {
                posix_spawn_file_actions_addopen(
                    &actions,
                    descriptor,
                    path ?? "/dev/null",
                    O_WRONLY | O_CREAT | O_APPEND,
                    0o644
                )
            }
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, &argv, &envp)
        guard result == 0 else {
            throw TemporaryPostgres.Unavailable(
                description: "cannot start \(arguments.joined(separator: " ")): \(String(cString: strerror(result)))"
            )
        }
        return SpawnedChild(pid: pid)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare: looked up once.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        {
            guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self
            )
        }()

    /// Whether it still runs (reaping it if it has ended).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// Waits for it to end; its exit status (128 + the signal if one ended it).
    @discardableResult
    public func wait() -> Int32 { reap(blocking: true) ?? -1 }

    private func reap(blocking: Bool) -> Int32? {
        ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            while true {
                let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
                if result == 0 { return nil }
                if result == pid { break }
                if errno == EINTR { continue }
                // Not ours to reap any more (ECHILD): it has ended.
                ended = -1
                return -1
            }
            let signal = status & 0x7f
            let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
            ended = code
            return code
        }
    }
}
