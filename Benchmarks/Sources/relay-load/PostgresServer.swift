import BenchProcess
import Foundation
import Glibc

/// A PostgreSQL server of the run's own for `--store postgres`: Debian's `postgresql`, a cluster
/// made with `initdb` under the scratch directory, listening on 127.0.0.1 only, with the server's
/// default durability (the relay asks for `synchronous_commit = on` itself), stopped by ``stop()``.
/// As root, the server runs as `nobody` (PostgreSQL refuses to run as root).
final class PostgresServer {
    let directory: String
    let port: Int
    private let bin: String
    private let server = Process()

    /// `postgres://` URI of the server's `postgres` database, as user `lansync`.
    var uri: String { "postgres://lansync@127.0.0.1:\(port)/postgres?sslmode=disable" }

    init(work: String, port: Int) throws {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard
            let bin = versions.compactMap(Int.init).sorted(by: >).map({ "\(root)/\($0)/bin" })
                .first(where: { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") })
        else {
            throw LoadError("PostgreSQL is not installed (no \(root)/*/bin/initdb): apt-get install postgresql")
        }
        self.bin = bin
        self.port = port
        directory = work + "/pg"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            // nobody must get through the scratch directory to its own.
            chmod(work, 0o711)
            try Self.run(["/bin/chown", "nobody:nogroup", directory], asNobody: false)
        }
        try Self.run([
            "\(bin)/initdb", "-D", "\(directory)/data", "-U", "lansync", "-A", "trust", "-E", "UTF8", "--locale=C",
        ])
        // The server is this process's own child (`postgres` itself: `pg_ctl` would leave a
        // daemon holding the descriptors Foundation watches to see a child end).
        let arguments = [
            "\(bin)/postgres", "-D", "\(directory)/data", "-p", "\(port)", "-k", directory, "-c",
            "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c",
            "shared_preload_libraries=pg_stat_statements",
        ]
        let command = Self.asNobody(arguments)
        server.executableURL = URL(fileURLWithPath: command[0])
        server.arguments = Array(command.dropFirst())
        server.currentDirectoryURL = URL(fileURLWithPath: "/")
        let log = directory + "/server.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        server.standardOutput = handle
        server.standardError = handle
        try server.run()
        let deadline = Date().addingTimeInterval(30)
        while (try? Self.run(["\(bin)/pg_isready", "-q", "-h", "127.0.0.1", "-p", "\(port)"])) == nil {
            guard server.isRunning, Date() < deadline else { throw LoadError("PostgreSQL did not start; see \(log)") }
            usleep(50_000)
        }
    }

    /// A fast shutdown (SIGINT), waited for.
    func stop() {
        guard server.isRunning else { return }
        kill(server.processIdentifier, SIGINT)
        server.waitUntilExit()
    }

    /// CPU seconds the server's processes (the postmaster and its backends) used so far, from
    /// /proc: the relay's work that runs in PostgreSQL.
    var cpuSeconds: Double {
        guard let text = try? String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first, let postmaster = Int32(first)
        else { return 0 }
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var total = ProcessFigures.cpuSeconds(postmaster)
        for pid in pids.compactMap(Int32.init) {
            // /proc/PID/stat: "pid (comm) state ppid ...", comm without spaces for postgres.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")"),
                Int32(stat[close...].split(separator: " ").dropFirst(2).first ?? "") == postmaster
            else { continue }
            total += ProcessFigures.cpuSeconds(pid)
        }
        return total
    }

    private static func run(_ arguments: [String], asNobody: Bool = true) throws {
        let command = asNobody ? Self.asNobody(arguments) : arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LoadError("\(arguments.joined(separator: " ")) failed") }
    }

    /// `arguments` run as nobody when this process is root (PostgreSQL refuses root).
    private static func asNobody(_ arguments: [String]) -> [String] {
        guard getuid() == 0 else { return arguments }
        return ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + arguments
    }
}
