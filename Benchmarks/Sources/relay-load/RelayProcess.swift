import BenchProcess
import Foundation
import Glibc

/// A `lansync relay` started from the release binary, on loopback, in a directory of its own.
final class RelayProcess {
    let name: String
    let directory: String
    let port: Int
    let process: Process
    let log: String

    /// Makes the relay's replica (`lansync init`, or a copy of another relay's directory for a
    /// second process on one replica in PostgreSQL) and starts it with `extra` arguments; returns
    /// once its log says it listens.
    init(
        lansync: String,
        work: String,
        cluster: String,
        name: String,
        port: Int,
        peers: [Int],
        maxSessions: Int,
        copyOf: RelayProcess? = nil,
        extra: [String] = []
    ) throws {
        self.name = name
        self.port = port
        directory = work + "/" + name
        log = directory + ".log"
        if let copyOf {
            // Its identity and settings; not its control socket (the relay runs). With --store
            // its SQLite file is idle.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            for file in try FileManager.default.contentsOfDirectory(atPath: copyOf.directory) {
                let from = copyOf.directory + "/" + file
                guard
                    (try FileManager.default.attributesOfItem(atPath: from)[.type] as? FileAttributeType)
                        == .typeRegular
                else { continue }
                try FileManager.default.copyItem(atPath: from, toPath: directory + "/" + file)
            }
        } else {
            try Self.run([lansync, "init", "--dir", directory, "--cluster", cluster, "--name", name])
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: lansync)
        process.arguments =
            [
                "relay", "--dir", directory, "--listen", "127.0.0.1:\(port)", "--no-api",
                "--max-sessions", String(maxSessions),
            ] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] } + extra
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = handle
        process.standardOutput = handle
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on 127.0.0.1:\(port)") {
            guard process.isRunning, Date() < deadline else {
                throw LoadError("\(name) did not start listening; see \(log)")
            }
            usleep(10_000)
        }
    }

    var pid: pid_t { process.processIdentifier }

    /// CPU seconds (user and system, every thread) used so far.
    var cpuSeconds: Double { ProcessFigures.cpuSeconds(pid) }
    /// Resident memory now and at its peak, in bytes.
    var rss: (now: Int, peak: Int) { (ProcessFigures.status(pid, "VmRSS:"), ProcessFigures.status(pid, "VmHWM:")) }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    static func run(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: arguments[0])
        p.arguments = Array(arguments.dropFirst())
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw LoadError("\(arguments.joined(separator: " ")) failed") }
    }
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
