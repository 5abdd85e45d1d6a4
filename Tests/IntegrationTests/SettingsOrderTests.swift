import Foundation
import Testing

/// Issue 62, defect 5, on the real binary: cluster settings made on an admitting machine whose
/// clock is ten minutes behind the settings they replace still win, on every member and on the
/// machine itself after its node restarts (before: other members kept the old window, and the
/// machine went back to it at its restart).
@Suite(.serialized) struct SettingsOrderTests {
    /// `cluster set` on `dir` until it shows `wanted`, at most 60 s (a bound on a hang, not a
    /// timing); what it showed last.
    func settings(_ cli: CLI, _ dir: String, showing wanted: String) async throws -> String {
        var shown = ""
        _ = try await eventually(every: .milliseconds(200)) {
            shown = try await cli.ok(["cluster", "set", "--dir", cli.path(dir)])
            return shown.contains(wanted)
        }
        return shown
    }

    @Test func newerSettingsFromASlowClockWinEverywhere() async throws {
        let cli = CLI("settings-order")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let p = freePorts(2)
        var a = try await NodeProcess(dir: cli.path("a"), port: p[0], peers: [p[1]])
        defer { a.stop() }
        let b = try await NodeProcess(dir: cli.path("b"), port: p[1], peers: [p[0]])
        defer { b.stop() }
        try await cli.ok(["cluster", "set", "--dir", cli.path("a"), "trash-window", "7d"])
        #expect(try await settings(cli, "b", showing: "trash-window 7d").contains("trash-window 7d"))

        let slow = try await cli.run(
            ["cluster", "set", "--dir", cli.path("a"), "trash-window", "1d"],
            environment: ["LANSYNC_TEST_CLOCK_SKEW_MS": "-600000"]
        )
        #expect(slow.succeeded && slow.stdout.contains("trash-window 1d"), "\(slow.stdout)\(slow.stderr)")
        let onB = try await settings(cli, "b", showing: "trash-window 1d")
        #expect(onB.contains("trash-window 1d"), "b kept the older settings: \(onB)\n\(b.logText)")

        #expect(a.stop() == 0)
        a = try await NodeProcess(dir: cli.path("a"), port: p[0], peers: [p[1]])
        let onA = try await settings(cli, "a", showing: "trash-window 1d")
        // a must not go back once it has met b again: b's hello brings both settings, the older
        // with the later clock (the restarted node's log is new, so the line is this run's).
        _ = await a.logContains("session with b (", within: 60)
        let again = try await cli.ok(["cluster", "set", "--dir", cli.path("a")])
        #expect(onA.contains("trash-window 1d") && again.contains("trash-window 1d"), "a went back: \(again)")
        #expect(a.isRunning && b.isRunning)
    }
}
