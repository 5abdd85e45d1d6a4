import Foundation
import LansyncCore
import LansyncStore
import LansyncTestSupport
import Synchronization
import Testing

@testable import LansyncPostgres

/// Relay processes on one replica hear of each other's commits (LISTEN/NOTIFY), on a real server
/// the test starts: a process hears another's commit and not its own, and hears again once the
/// server is back after a restart.
@Suite struct PostgresNotificationTests {
    /// How many times a stream yielded.
    final class Heard: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }

    /// Waits (a bound on a hang, not a measure) until `condition` holds; false if it never did.
    /// Generous: the listening runs on Swift's cooperative threads, which the other suites'
    /// blocking calls to their servers hold for long stretches (two threads on two cores; a
    /// relay's node makes its blocking calls on threads of its own).
    static func eventually(within seconds: Double = 180, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try condition()
    }

    @Test func aProcessHearsAnothersCommitsAndNotItsOwn() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let location = try PostgresLocation(parsing: server.uri)
        let a = try PostgresReplicaTests.replica(server, schema: "shared")
        defer { a.close() }
        let b = try PostgresReplica.open(at: location, schema: "shared", logger: PostgresReplicaTests.logger)
        defer { b.close() }
        let stream = try #require(b.commitsElsewhere())
        let heard = Heard()
        let listening = Task { for await _ in stream { heard.add() } }
        defer { listening.cancel() }
        // Once as the listening begins (for what came before it).
        #expect(try await Self.eventually { heard.value >= 1 && b.quickChangeMark() == b.quickChangeMark() })
        let wall: UInt64 = 1_700_000_000_000
        func edit(_ replica: PostgresReplica, _ n: Int) throws {
            try replica.apply(
                .create(type: "t", assignments: [.set(.named("n"), .integer(Int64(n)))]),
                to: .named("i\(n)"),
                wallMilliseconds: wall + UInt64(n)
            )
        }
        // Its own commit: not heard. (A wait long enough for a notification to arrive here.)
        let before = (heard.value, b.quickChangeMark())
        try edit(b, 1)
        try await Task.sleep(for: .milliseconds(500))
        #expect(heard.value == before.0)
        #expect(b.quickChangeMark() == before.1)
        // Another process's: heard, and the mark the node's poll reads moves.
        try edit(a, 2)
        #expect(try await Self.eventually { heard.value > before.0 })
        #expect(b.quickChangeMark() != before.1)
        // The server restarts: meanwhile the mark moves at every read (the node reads the
        // replica every poll); once it is back, the listening resumes and a commit is heard.
        try server.stopServer()
        #expect(try await Self.eventually { b.quickChangeMark() != b.quickChangeMark() })
        try server.start()
        #expect(try await Self.eventually { b.quickChangeMark() == b.quickChangeMark() })
        let afterRestart = heard.value
        try PostgresWriterTests.afterRestart { try edit(a, 3) }
        #expect(try await Self.eventually { heard.value > afterRestart })
    }
}
