import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Synchronization
import Testing

@testable import LansyncPostgres

/// Relay processes on one replica hear of each other's commits (LISTEN/NOTIFY), on a real server
/// the test starts: a process hears another's commit and statement and not its own commit, and
/// hears again once the server is back after a restart.
@Suite struct PostgresNotificationTests {
    /// What a stream yielded, in order.
    final class Heard: Sendable {
        private let kinds = Mutex<[CommitElsewhere]>([])
        var all: [CommitElsewhere] { kinds.withLock { $0 } }
        var value: Int { all.count }
        func add(_ kind: CommitElsewhere) { kinds.withLock { $0.append(kind) } }
    }

    /// Whether `replica` listens now: its mark is the count it heard, not one that moves at every
    /// read (the first part; the second is the wall clock's ten seconds).
    static func listens(_ replica: PostgresReplica) -> Bool { replica.quickChangeMark().first != -1 }

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
        let listening = Task { for await kind in stream { heard.add(kind) } }
        defer { listening.cancel() }
        // As the listening begins, both kinds (for what came before it).
        #expect(try await Self.eventually { heard.value >= 2 && Self.listens(b) })
        #expect(Set(heard.all.prefix(2)) == [.statements, .replica])
        let wall: UInt64 = 1_700_000_000_000
        func edit(_ replica: PostgresReplica, _ n: Int) throws {
            try replica.apply(
                .create(type: "t", assignments: [.set(.named("n"), .integer(Int64(n)))]),
                to: .named("i\(n)"),
                wallMilliseconds: wall + UInt64(n)
            )
        }
        // Its own commit is not heard; another process's statement, committed after it, is
        // (notices arrive in commit order: once the statement is heard, the edit's notice was
        // too, had it been let through), and the mark the node's poll reads moves.
        let before = (heard.value, b.quickChangeMark().first)
        try edit(b, 1)
        #expect(try a.addStatements([(key: [1], record: [1])]) == 1)
        #expect(try await Self.eventually { heard.all.dropFirst(before.0).contains(.statements) })
        #expect(!heard.all.dropFirst(before.0).contains(.replica), "\(heard.all.dropFirst(before.0))")
        #expect(b.quickChangeMark().first != before.1)
        // Another process's edit: heard as a change of the replica.
        let count = heard.value
        try edit(a, 2)
        #expect(try await Self.eventually { heard.all.dropFirst(count).contains(.replica) })
        // The server restarts: meanwhile the mark moves at every read (the node reads the
        // replica every poll); once it is back, the listening resumes and a commit is heard.
        try server.stopServer()
        #expect(try await Self.eventually { !Self.listens(b) })
        try server.start()
        #expect(try await Self.eventually { Self.listens(b) })
        let afterRestart = heard.value
        try PostgresWriterTests.afterRestart { try edit(a, 3) }
        #expect(try await Self.eventually { heard.all.dropFirst(afterRestart).contains(.replica) })
    }
}
