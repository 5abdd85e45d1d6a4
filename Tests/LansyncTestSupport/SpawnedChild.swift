import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid` on its own pid.
///
/// Foundation's `Process` learns that a child ended from SIGCHLD on a thread of its own; in a CI
/// run on ef4bb31 that notice stopped coming (a node it had started stayed a zombie), and every
/// `waitUntilExit` after it waited for ever, on the cooperative pool's two threads: the suite
/// hung. A test's PostgreSQL server and its programs are waited for this way instead.
final class SpawnedChild: Sendable {
    let pid: pid_t
    /// The exit status once it was reaped (128 + the signal if one ended it).
    private let ended = Mutex<Int32?>(nil)

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `arguments` (the first is the program's path) in `/`, its standard output and error
    /// appended to the file `output`.
    static func spawn(_ arguments: [String], output: String) throws -> SpawnedChild {
        // `env -C /`: the programs look for files relative to the working directory, and nobody
        // cannot read root's.
        let command = ["/usr/bin/env", "-C", "/"] + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, &argv, environ)
        guard result == 0 else {
            throw TemporaryPostgres.Unavailable(
                description: "cannot start \(arguments.joined(separator: " ")): \(String(cString: strerror(result)))"
            )
        }
        return SpawnedChild(pid: pid)
    }

    /// Whether it still runs (reaping it if it has ended).
    var isRunning: Bool { reap(blocking: false) == nil }

    /// Waits for it to end; its exit status (128 + the signal if one ended it).
    @discardableResult
    func wait() -> Int32 { reap(blocking: true) ?? -1 }

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
