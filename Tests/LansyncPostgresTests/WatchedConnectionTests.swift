import LansyncTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import LansyncPostgres

/// Every answer awaited on a connection ends, on a real server the test starts: a query answers
/// as usual; an answer that never comes (what postgres-nio leaves of a query written as its
/// channel closes) fails when the connection closes, or, on a connection that stays open and
/// silent, once its bound passes; and nothing waits on a connection already closed.
@Suite struct WatchedConnectionTests {
    static func connected(_ server: TemporaryPostgres) throws -> WatchedConnection {
        let connector = PostgresConnector(
            location: try PostgresLocation(parsing: server.uri),
            logger: PostgresReplicaTests.logger
        )
        return WatchedConnection(try connector.connect(id: 1).wait())
    }

    /// What `future` ended with: nil if it succeeded, else the failure's text.
    static func failure<T: Sendable>(of future: EventLoopFuture<T>) async -> String? {
        do {
            _ = try await future.get()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func anAnswerThatNeverComesFailsWhenTheConnectionCloses() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let watched = try Self.connected(server)
        let connection = watched.connection
        let one = try await watched.answer(within: .seconds(60)) { (answered: EventLoopPromise<PostgresQueryResult>) in
            connection.query("SELECT 1", logger: PostgresReplicaTests.logger).cascade(to: answered)
        }.get()
        #expect(try one.rows.first?.decode(Int.self) == 1, "a query answers as usual")

        // An answer nobody will give, as a query dropped with its write: the close ends the wait.
        let forgotten = watched.answer(within: .seconds(20)) { (_: EventLoopPromise<Int>) in }
        try await connection.close()
        let why = await Self.failure(of: forgotten)
        #expect(why?.contains("closed before the server answered") == true, "\(why ?? "it succeeded")")

        // Asked after the close: fails at once, whatever the query would do.
        let late = watched.answer(within: .seconds(20)) { (answered: EventLoopPromise<PostgresQueryResult>) in
            connection.query("SELECT 1", logger: PostgresReplicaTests.logger).cascade(to: answered)
        }
        let lateWhy = await Self.failure(of: late)
        #expect(lateWhy?.contains("closed before the server answered") == true, "\(lateWhy ?? "it succeeded")")
    }

    @Test func aConnectionThatStaysSilentMeetsTheBoundAndIsClosed() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let watched = try Self.connected(server)
        let silent = watched.answer(within: .milliseconds(300)) { (_: EventLoopPromise<Int>) in }
        let why = await Self.failure(of: silent)
        #expect(why?.contains("no answer within") == true, "\(why ?? "it succeeded")")
        // The connection is closed with it: the next call opens another.
        try await watched.connection.closeFuture.get()
        #expect(watched.isClosed)
    }
}
