import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// One PostgreSQL connection used by blocking calls: each call waits for its answer on the
/// calling thread, one call at a time, and a connection found closed is opened again at the
/// next call.
///
/// The replica's requirements are blocking (``LansyncStore/ReplicaStorage``: the node calls them
/// on its blocking-I/O threads), and postgres-nio answers on its event loops: waiting for a
/// future from a thread that is not an event loop's is what NIO allows (it traps on an event
/// loop's own thread, so a misplaced call fails loudly rather than hanging).
final class BlockingPostgres: Sendable {
    let connector: PostgresConnector
    /// Run on every connection when it opens (the schema's search path).
    let prepare: @Sendable (PostgresConnection) -> EventLoopFuture<Void>
    private let connection = Mutex<PostgresConnection?>(nil)
    /// Held for a whole call, so that a transaction's statements are never interleaved with
    /// another caller's.
    private let turn = Mutex<Void>(())
    private let opened = Atomic<Int>(0)

    init(connector: PostgresConnector, prepare: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<Void>) {
        self.connector = connector
        self.prepare = prepare
    }

    /// Statements run in one transaction, in turn with every other call: committed if `body`
    /// returns, rolled back if it throws (and the error passed on). A `snapshot` is read-only and
    /// sees one committed state throughout (`REPEATABLE READ`), as a read in SQLite's WAL does; a
    /// `write` is `READ COMMITTED` whatever the server's default, so that what it reads after
    /// taking the write lock is what the last writer committed. A connection whose COMMIT or
    /// ROLLBACK failed is closed (it could be left inside the transaction).
    func transaction<T>(snapshot: Bool = false, write: Bool = false, _ body: (Statements) throws -> T) throws -> T {
        try turn.withLock { _ in
            let statements = Statements(connection: try connected(), logger: connector.logger)
            try statements.run(
                snapshot
                    ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                    : write ? "BEGIN ISOLATION LEVEL READ COMMITTED" : "BEGIN"
            )
            let result: T
            do {
                result = try body(statements)
            } catch {
                do { try statements.run("ROLLBACK") } catch { dropConnection() }
                throw error
            }
            do {
                try statements.run("COMMIT")
            } catch {
                dropConnection()
                throw error
            }
            return result
        }
    }

    /// Statements run outside any transaction (each its own), in turn with every other call.
    func statements<T>(_ body: (Statements) throws -> T) throws -> T {
        try turn.withLock { _ in try body(Statements(connection: try connected(), logger: connector.logger)) }
    }

    /// A connection still open is closed (postgres-nio's debug build stops the process on one
    /// dropped open, and a release build would leak it): waited for, unless this is an event
    /// loop's thread (which may not wait).
    deinit {
        if MultiThreadedEventLoopGroup.currentEventLoop == nil {
            close()
        } else {
            connection.withLock { $0 }.map(Self.closeLater)
        }
    }

    /// Closes the connection without waiting, and forgets it: the next call opens another.
    private func dropConnection() {
        let current = connection.withLock { current in
            defer { current = nil }
            return current
        }
        current.map(Self.closeLater)
    }

    /// Closes `connection` without waiting, keeping it alive until it is closed (postgres-nio
    /// asserts on one released while still open).
    private static func closeLater(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes the connection; a later call opens another.
    func close() {
        let current = connection.withLock { current in
            defer { current = nil }
            return current
        }
        try? current?.close().wait()
    }

    private func connected() throws -> PostgresConnection {
        if let current = connection.withLock({ $0 }), !current.isClosed { return current }
        let id = opened.add(1, ordering: .relaxed).newValue
        let fresh = try connector.connect(id: id, prepare: prepare).wait()
        connection.withLock { $0 = fresh }
        return fresh
    }

    /// The statements of one call, on its connection.
    struct Statements {
        let connection: PostgresConnection
        let logger: Logger

        /// Runs one statement; its rows.
        @discardableResult
        func run(_ query: PostgresQuery) throws -> [PostgresRow] {
            try connection.query(query, logger: logger).wait().rows
        }

        /// The first column of the first row, if there is one.
        func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) throws -> T? {
            try run(query).first?.decode(T.self)
        }
    }
}
