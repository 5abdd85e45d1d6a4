import Foundation
import LansyncTestSupport
import Subprocess
import SystemPackage
import Testing

/// Runs the real `lansync` binary (built next to this test bundle) as a separate process.
struct CLI {
    /// Where `swift build` put the binary: beside the test bundle, or `LANSYNC_BIN`.
    static let binary: String = {
        // Children die mid-input in the crash tests: a write to their stdin must fail with EPIPE,
        // not kill the test process with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        if let override = ProcessInfo.processInfo.environment["LANSYNC_BIN"] { return override }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return me.deletingLastPathComponent().appendingPathComponent("lansync").path
    }()

    /// The test tools (`lansync-debug`, never shipped): beside ``binary``, or `LANSYNC_DEBUG_BIN`.
    static let debugBinary: String = {
        if let override = ProcessInfo.processInfo.environment["LANSYNC_DEBUG_BIN"] { return override }
        return URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("lansync-debug").path
    }()

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        var succeeded: Bool { status == 0 }
        var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    /// A scratch area for one test: HOME, data directories, files.
    let root: String

    init(_ label: String) {
        root = makeTemporaryDirectory(label)
    }

    func path(_ name: String) -> String { root + "/" + name }

    /// Runs `lansync ARGS...` with HOME pointing into the scratch area and no LANSYNC_DIR.
    @discardableResult
    func run(
        _ arguments: [String],
        input: String? = nil,
        environment extra: [String: String] = [:],
        binary: String = Self.binary
    ) async throws -> Result {
        precondition(FileManager.default.isExecutableFile(atPath: binary), "build the binary first: \(binary)")
        var env: [Environment.Key: String?] = ["HOME": root, "LANSYNC_DIR": nil]
        for (k, v) in extra { env[Environment.Key(stringLiteral: k)] = v }
        let result = try await Subprocess.run(
            .path(FilePath(binary)),
            arguments: Arguments(arguments),
            environment: .inherit.updating(env),
            input: .string(input ?? ""),
            output: .string(limit: 64 << 20),
            error: .string(limit: 1 << 20)
        )
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = code
        case .signaled(let signal): status = 128 + signal
        }
        return Result(status: status, stdout: result.standardOutput, stderr: result.standardError)
    }

    /// `lansync ARGS...`, expecting success; returns stdout.
    @discardableResult
    func ok(
        _ arguments: [String],
        input: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let result = try await run(arguments, input: input)
        #expect(
            result.status == 0,
            "lansync \(arguments.joined(separator: " ")) failed: \(result.stderr)",
            sourceLocation: sourceLocation
        )
        return result.stdout
    }

    /// A cluster secret and an initialised data directory for each name.
    func cluster(_ names: [String]) async throws {
        if !FileManager.default.fileExists(atPath: path("cluster.pem")) {
            try await ok(["cluster", "create", path("cluster.pem")])
        }
        for name in names {
            try await ok(["init", "--dir", path(name), "--cluster", path("cluster.pem"), "--name", name])
        }
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: root) }
}
