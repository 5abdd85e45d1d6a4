import Foundation
import Testing

/// The project's mDNS lab (`scripts/lab.sh`): hosts in their own network namespaces, each with its
/// own D-Bus and avahi-daemon. Tests that use it run only where it can (root, network namespaces,
/// avahi-daemon installed), and otherwise are skipped with the reason, or fail with it when
/// `LANSYNC_REQUIRE_LAB=1` (set by `.ci/run` where the lab should work).
struct Lab {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lab.sh").path
    static let environment = ["LAB_PREFIX": "lst", "LAB_DIR": "/tmp/lansync-lab-tests"]

    /// Nil if the lab can run here, else why not.
    static let unavailableReason: String? = {
        let (status, output) = runBlocking(["check"])
        return status == 0 ? nil : "mDNS lab unavailable: " + output.trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    /// `LANSYNC_REQUIRE_LAB=1`: the lab tests run even where the lab is unavailable, and fail there.
    static let required = ProcessInfo.processInfo.environment["LANSYNC_REQUIRE_LAB"] == "1"

    static var available: Bool { unavailableReason == nil || required }

    /// Runs `scripts/lab.sh ARGUMENTS...` to completion and returns its status and output.
    ///
    /// Spawned with posix_spawn and reaped with waitpid here: `Foundation.Process.waitUntilExit()`
    /// was seen never to return when called while Swift Testing evaluates a trait, with the child
    /// already a zombie. Output goes to a file, not a pipe, because the daemons the script starts
    /// would otherwise hold the pipe open.
    @discardableResult
    static func run(_ arguments: [String]) async -> (Int32, String) {
        await offThePool { runBlocking(arguments) }
    }

    /// ``run(_:)`` for a caller that cannot await (a trait's condition, a static's first value).
    @discardableResult
    static func runBlocking(_ arguments: [String]) -> (Int32, String) {
        let outputPath = "/tmp/lansync-lab-run-\(getpid())-\(UInt32.random(in: 0 ... .max)).out"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ["/bin/bash", script] + arguments
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", &actions, nil, &cArgs, &cEnv) == 0 else {
            return (127, "cannot run \(script)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), text)
    }

    let hosts: Int

    /// Brings up `hosts` lab hosts, on the networks `spec` gives them (`scripts/lab.sh`: e.g.
    /// `"a46,a6,al"`; by default each on bridge a with IPv4 only); `down()` (in a defer) removes
    /// them even when the test fails.
    init(hosts: Int, spec: String = "") async throws {
        self.hosts = hosts
        if let reason = Self.unavailableReason {
            throw LabError(description: "LANSYNC_REQUIRE_LAB=1, but \(reason)")
        }
        let (status, output) = await Self.run(["up", String(hosts), spec])
        guard status == 0 else {
            await Self.run(["down"])
            throw LabError(description: "lab up failed: \(output)")
        }
    }

    /// Takes the lab down (blocking: a `defer` cannot await).
    func down() { Self.runBlocking(["down"]) }

    static func address(_ host: Int) -> String { "10.77.0.\(host)" }

    /// Host `i`'s unique-local IPv6 address on bridge a (a host whose spec has `6`).
    static func ipv6Address(_ host: Int) -> String { "fd77::\(host)" }

    /// Links hosts `i` and `j` point to point (a VPN: mDNS does not cross it); `i` routes
    /// between it and bridge a. `j` is `10.79.0.j` on it.
    func pointToPoint(_ i: Int, _ j: Int) async throws {
        let (status, output) = await Self.run(["p2p", String(i), String(j)])
        guard status == 0 else { throw LabError(description: "lab p2p failed: \(output)") }
    }

    /// The process id of host `i`'s avahi-daemon.
    static func avahiPID(_ host: Int) throws -> pid_t {
        let path = "\(environment["LAB_DIR"]!)/n\(host)/avahi.pid"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw LabError(description: "no avahi-daemon pid in \(path)") }
        return pid
    }

    /// The command prefix that runs a program in host `i` with its D-Bus.
    static func exec(_ host: Int) -> [String] { [script, "exec", String(host)] }
}

struct LabError: Error, CustomStringConvertible { let description: String }
