import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Subprocess
import SystemPackage
import Testing

/// Writers killed with SIGKILL at random points: the file stays intact, every acknowledged edit
/// is there, no counter is issued twice, and an import is all or nothing.
@Suite(.serialized) struct CrashTests {
    static let seed: UInt64 =
        getenvString("LANSYNC_CRASH_SEED").flatMap { UInt64($0) } ?? UInt64(Date().timeIntervalSince1970)

    /// Runs `lansync ARGS`, kills it with SIGKILL after `delay`, and returns its stdout lines
    /// (everything it printed before dying) and whether it had already exited by itself.
    static func runAndKill(
        _ arguments: [String],
        binary: String = CLI.binary,
        after delay: Duration
    ) async throws -> (lines: [String], finished: Bool) {
        let result = try await Subprocess.run(
            .path(FilePath(binary)),
            arguments: Arguments(arguments),
            input: .none,
            output: .sequence,
            error: .discarded
        ) { execution in
            async let collected: [String] = {
                var lines: [String] = []
                for try await line in execution.standardOutput.strings() { lines.append(line) }
                return lines
            }()
            // A sleep: the kill comes at a random moment of the writer's work (the seed's delay),
            // not at an event; that is what the test is.
            try await Task.sleep(for: delay)
            try? execution.send(signal: .kill)
            return try await collected
        }
        let finished: Bool
        if case .exited(0) = result.terminationStatus { finished = true } else { finished = false }
        return (result.closureResult, finished)
    }

    @Test func killedWritersLoseNothingAcknowledged() async throws {
        let cli = CLI("crash")
        defer { cli.cleanUp() }
        try await cli.ok(["cluster", "create", cli.path("cluster.pem")])
        try await cli.ok(["init", "--dir", cli.path("a"), "--cluster", cli.path("cluster.pem"), "--history", "1000000"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "c", "n=start"])
        var rng = SplitMix64(seed: Self.seed)
        var acknowledged: [(counter: UInt64, value: String)] = []
        let rounds = 30
        for round in 0..<rounds {
            let delay = Duration.milliseconds(Int.random(in: 5...150, using: &rng))
            let (lines, _) = try await Self.runAndKill(
                ["edit-loop", "--dir", cli.path("a"), "c", "1000000", "--tag", "r\(round)"],
                binary: CLI.debugBinary,
                after: delay
            )
            for line in lines {
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, let counter = UInt64(parts[0]) else {
                    Issue.record("odd line '\(line)'")
                    continue
                }
                acknowledged.append((counter, String(parts[1])))
            }
        }
        print("crash test (seed \(Self.seed)): \(rounds) writers killed, \(acknowledged.count) acknowledged edits")
        #expect(acknowledged.count > 0)
        let store = try ReplicaStore.open(path: cli.path("a/replica.sqlite"))
        #expect(try store.integrityCheck() == "ok")
        let history = try store.history(try ItemID("c"), field: try FieldName("n"))
        var stored: [UInt64: FieldVersion.Write] = [:]
        for entry in history {
            #expect(
                stored.updateValue(entry.write, forKey: entry.dot.counter) == nil,
                "counter \(entry.dot.counter) stored twice"
            )
        }
        #expect(
            Set(acknowledged.map(\.counter)).count == acknowledged.count,
            "a counter was acknowledged twice (seed \(Self.seed))"
        )
        for ack in acknowledged {
            #expect(
                stored[ack.counter] == .assign(.string(ack.value)),
                "acknowledged edit \(ack.counter)=\(ack.value) is missing (seed \(Self.seed))"
            )
        }
        // The version vector covers every issued counter, so the next one is new.
        #expect(try store.versionVector()[try store.info().nodeID] >= acknowledged.map(\.counter).max() ?? 0)
    }

    @Test func aKilledImportIsAllOrNothing() async throws {
        let cli = CLI("crash-import")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        var rng = SplitMix64(seed: Self.seed ^ 1)
        let size = 2000
        var killed = 0
        defer { print("import crash test (seed \(Self.seed)): \(killed) of 8 imports killed mid-way") }
        for round in 0..<8 {
            // The input comes from a file, not stdin: a process killed while we still fed its
            // stdin would make the feeding fail under us.
            let input = (0..<size).map {
                #"{"id":"r\#(round)-\#($0)","type":"bulk","fields":{"i":\#($0),"text":"row \#($0)"}}"#
            }.joined(separator: "\n")
            let file = cli.path("round-\(round).jsonl")
            try input.write(toFile: file, atomically: true, encoding: .utf8)
            let delay = Duration.milliseconds(Int.random(in: 20...600, using: &rng))
            let (_, finished) = try await Self.runAndKill(["import", "--dir", cli.path("a"), file], after: delay)
            let store = try ReplicaStore.open(path: cli.path("a/replica.sqlite"))
            var count = 0
            try store.forEachItem(type: "bulk") { if $0.id.rawValue.hasPrefix("r\(round)-") { count += 1 } }
            #expect(count == 0 || count == size, "round \(round): \(count) of \(size) items (seed \(Self.seed))")
            if finished { #expect(count == size) } else { killed += 1 }
            #expect(try store.integrityCheck() == "ok")
        }
    }
}
