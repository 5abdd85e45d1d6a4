import Foundation
import Synchronization

/// A PostgreSQL server of a test's own: Debian's `postgresql` package, a new cluster made with
/// `initdb` in a temporary directory, listening on 127.0.0.1 only, stopped and removed by
/// ``stop()`` (every test calls it in a `defer`; `deinit` calls it too), so no daemon outlives
/// its test. As root, the server runs as `nobody` (PostgreSQL refuses to run as root).
///
/// The server trades durability for speed (`fsync=off`): the tests check lansync's behaviour,
/// not PostgreSQL's.
public final class TemporaryPostgres: Sendable {
    /// Why a server could not be started here, said as the test's failure.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: String
    public let port: Int
    private let bin: String
    private let stopped = Mutex(false)
    /// The running server, nil while stopped.
    private let server = Mutex<SpawnedChild?>(nil)

    /// `postgres://` URI of the server's `postgres` database, as user `lansync` (no password).
    public var uri: String { "postgres://lansync@127.0.0.1:\(port)/postgres?sslmode=disable" }

    /// Makes a cluster and starts its server; throws ``Unavailable`` with the reason when it
    /// cannot (no PostgreSQL installed: `scripts/test.sh` installs it).
    public init() throws {
        guard let bin = Self.binaries() else {
            throw Unavailable(
                description:
                    "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): scripts/test.sh installs Debian's postgresql"
            )
        }
        self.bin = bin
        directory = NSTemporaryDirectory() + "lansync-pg-" + UUID().uuidString.prefix(8).lowercased()
        port = Self.serverPort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try Self.run(["/bin/chown", "nobody:nogroup", directory], asNobody: false) }
        try Self.run(
            [
                "\(bin)/initdb", "-D", "\(directory)/data", "-U", "lansync", "-A", "trust", "--no-sync", "-E", "UTF8",
                "--locale=C",
            ]
        )
        try start()
    }

    deinit { stop() }

    /// One server for the whole test process, made at its first use and stopped when the process
    /// exits: for suites that make many short-lived replicas, each in a schema of its own (the 50
    /// PostgreSQL cases of StreamTests each made, started and removed a cluster: about a minute
    /// of the machine's two cores a run). A test that stops, restarts or reconfigures its server
    /// makes one of its own.
    public static func shared() throws -> TemporaryPostgres {
        try sharedServer.withLock { shared in
            if let shared { return shared }
            let made = try TemporaryPostgres()
            shared = made
            atexit { TemporaryPostgres.sharedServer.withLock { $0?.stop() } }
            return made
        }
    }

    private static let sharedServer = Mutex<TemporaryPostgres?>(nil)

    /// Starts the server (again, after ``stopServer()``), waiting until it accepts connections.
    ///
    /// The server is this process's own child (`postgres` itself, not `pg_ctl`, which would leave
    /// a daemon this process could not wait for).
    public func start() throws {
        let arguments = [
            "\(bin)/postgres", "-D", "\(directory)/data", "-p", "\(port)", "-k", directory, "-c",
            "listen_addresses=127.0.0.1",
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        ]
        let process = try SpawnedChild.spawn(Self.asNobody(arguments), output: "\(directory)/server.log")
        server.withLock { $0 = process }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            guard process.isRunning else { throw Unavailable(description: "postgres stopped at start: \(self.log)") }
            // Listening is not yet ready (recovery after an immediate stop refuses sessions).
            if Self.accepts(port: port),
                (try? Self.run(["\(bin)/pg_isready", "-q", "-h", "127.0.0.1", "-p", "\(port)"])) != nil
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw Unavailable(description: "postgres did not accept connections within 30 s: \(self.log)")
    }

    /// Stops the server at once (immediate shutdown: as a crash would, recovered at the next
    /// start), keeping its files.
    public func stopServer() throws {
        guard let process = server.withLock({ $0 }), process.isRunning else { return }
        kill(process.pid, SIGQUIT)
        process.wait()
        server.withLock { $0 = nil }
        // The server's children go when they notice it has gone; the next start waits for them.
        Thread.sleep(forTimeInterval: 0.2)
    }

    /// Stops the server if it runs and removes its files. Idempotent.
    public func stop() {
        let already = stopped.withLock { done in
            defer { done = true }
            return done
        }
        guard !already else { return }
        try? stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `query` with Debian's psql and returns its rows, one line each (columns joined by
    /// `|`): how a test looks into the tables, or changes what only time would change.
    public func sql(_ query: String) throws -> [String] {
        let outputPath = NSTemporaryDirectory() + "lansync-pg-rows-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        try Self.run(["\(bin)/psql", uri, "-Atc", query, "-o", outputPath], asNobody: false)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// A role `user` that must log in over TCP with `password` (SCRAM), as a production server
    /// asks; the server's own user `lansync` stays trusted.
    public func requirePassword(user: String, password: String) throws {
        _ = try sql("CREATE ROLE \(user) LOGIN PASSWORD '\(password)'")
        let hba = "\(directory)/data/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        // The first matching line decides: this one goes before initdb's trust lines.
        try ("host all \(user) 127.0.0.1/32 scram-sha-256\n" + rules).write(
            toFile: hba,
            atomically: false,
            encoding: .utf8
        )
        _ = try sql("SELECT pg_reload_conf()")
    }

    /// The server's log, for a failing test's message.
    public var log: String { (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "" }

    private static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted(by: >).map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }
    }

    /// Runs a PostgreSQL program (as `nobody` when this process is root), throwing with its
    /// output when it fails.
    private static func run(_ arguments: [String], asNobody: Bool = true) throws {
        let command = asNobody ? Self.asNobody(arguments) : arguments
        // A file, not a pipe: the server pg_ctl starts inherits the descriptors and keeps them
        // open, so a pipe would never reach its end.
        let outputPath = NSTemporaryDirectory() + "lansync-pg-output-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try SpawnedChild.spawn(command, output: outputPath).wait()
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Unavailable(description: "\(arguments.joined(separator: " ")) failed (\(status)): \(text)")
        }
    }

    /// `arguments` run as nobody when this process is root (setpriv executes the program itself,
    /// so the process is the program).
    private static func asNobody(_ arguments: [String]) -> [String] {
        guard getuid() == 0 else { return arguments }
        return ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + arguments
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A port on 127.0.0.1 that nothing is bound to now, below the range the kernel gives the
    /// local ends of outgoing connections (`net.ipv4.ip_local_port_range`): a server stopped and
    /// started again on it (as the tests that take PostgreSQL away do) finds it free. A port from
    /// that range may be some test's connection by then (CI on 2dc2ade: "could not bind
    /// 127.0.0.1:40565: Address already in use" at a restart).
    static func serverPort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
        let first = range?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
        let below = max(1024, first - 10_000)..<max(1025, first)
        for _ in 0..<200 {
            let port = Int.random(in: below)
            if canBind(port) { return port }
        }
        return freePort()
    }

    /// Whether a socket can be bound to 127.0.0.1:`port` now.
    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A TCP port on 127.0.0.1 that nothing listens on now.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
