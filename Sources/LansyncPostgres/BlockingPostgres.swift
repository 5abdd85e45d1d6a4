import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// A few PostgreSQL connections used by blocking calls: each call takes a connection of its own
/// for its whole length and waits for its answers on the calling thread, and a connection found
/// closed is opened again at the next call that takes it.
///
/// Several connections, because a call is mostly waiting for round trips: with one, every
/// session's delta read of a relay queued behind every other call (W10 on PostgreSQL, issue 34:
/// a quarter of the deliveries asked for, with neither the relay nor the server busy). A call takes
/// a free connection, or waits for one in turn; calls never nest, so none waits on itself.
///
/// The replica's requirements are blocking (``LansyncStore/ReplicaStorage``: the node calls them
/// on its blocking-I/O threads), and postgres-nio answers on its event loops: waiting for a
/// future from a thread that is not an event loop's is what NIO allows (it traps on an event
/// loop's own thread, so a misplaced call fails loudly rather than hanging).
final class BlockingPostgres: Sendable {
    let connector: PostgresConnector
    /// Run on every connection when it opens (the schema's search path).
    let prepare: @Sendable (PostgresConnection) -> EventLoopFuture<Void>
    private let slots: [Slot]
    /// Where a call that finds no connection free waits (in turn).
    private let nextSlot = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)

    /// How many connections at most: the node runs its replica calls on five threads (two for
    /// reads and one for writes, one of each for upkeep), so none waits for a connection. Write
    /// transactions of one process take turns on the server's write lock, like those of
    /// different processes, where a wait is bounded by `lock_timeout` (30 s: a batch that meets a
    /// longer collection round fails, and its session is dialled again).
    static let connections = 5

    /// One connection and the turn a call holds for its whole length, so that a transaction's
    /// statements are never interleaved with another caller's.
    private final class Slot: Sendable {
        let connection = Mutex<WatchedConnection?>(nil)
        let turn = Mutex<Void>(())
    }

    init(
        connector: PostgresConnector,
        connections: Int = BlockingPostgres.connections,
        prepare: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<Void>
    ) {
        self.connector = connector
        self.prepare = prepare
        slots = (0..<max(1, connections)).map { _ in Slot() }
    }

    /// Statements run in one transaction, on a connection no other call uses meanwhile:
    /// committed if `body` returns, rolled back if it throws (and the error passed on). A
    /// `snapshot` is read-only and sees one committed state throughout (`REPEATABLE READ`), as a
    /// read in SQLite's WAL does; a `write` is `READ COMMITTED` whatever the server's default, so
    /// that what it reads after taking the write lock is what the last writer committed. A
    /// connection whose COMMIT or ROLLBACK failed is closed (it could be left inside the
    /// transaction).
    func transaction<T>(snapshot: Bool = false, write: Bool = false, _ body: (Statements) throws -> T) throws -> T {
        try withSlot { slot in
            let statements = Statements(watched: try connected(slot), logger: connector.logger)
            try statements.run(
                snapshot
                    ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                    : write ? "BEGIN ISOLATION LEVEL READ COMMITTED" : "BEGIN"
            )
            let result: T
            do {
                result = try body(statements)
            } catch {
                do { try statements.run("ROLLBACK") } catch { dropConnection(slot) }
                throw error
            }
            do {
                try statements.run("COMMIT")
            } catch {
                dropConnection(slot)
                throw error
            }
            return result
        }
    }

    /// Statements run outside any transaction (each its own), on a connection no other call
    /// uses meanwhile.
    func statements<T>(_ body: (Statements) throws -> T) throws -> T {
        try withSlot { slot in
            try body(Statements(watched: try connected(slot), logger: connector.logger))
        }
    }

    /// `body` with a connection's turn held: a free one if there is one, else the next in turn.
    private func withSlot<T>(_ body: (Slot) throws -> T) throws -> T {
        for slot in slots {
            if let result = try slot.turn.withLockIfAvailable({ _ in try body(slot) }) { return result }
        }
        let slot = slots[nextSlot.add(1, ordering: .relaxed).oldValue % slots.count]
        return try slot.turn.withLock { _ in try body(slot) }
    }

    /// Connections still open are closed (postgres-nio's debug build stops the process on one
    /// dropped open, and a release build would leak it): waited for, unless this is an event
    /// loop's thread (which may not wait).
    deinit {
        if MultiThreadedEventLoopGroup.currentEventLoop == nil {
            close()
        } else {
            for slot in slots { slot.connection.withLock { $0 }?.connection.closeLater() }
        }
    }

    /// Closes a slot's connection without waiting, and forgets it: the next call opens another.
    private func dropConnection(_ slot: Slot) {
        let current = slot.connection.withLock { current in
            defer { current = nil }
            return current
        }
        current?.connection.closeLater()
    }

    /// Closes the connections; a later call opens another.
    func close() {
        for slot in slots {
            let current = slot.connection.withLock { current in
                defer { current = nil }
                return current
            }
            try? current?.connection.close().wait()
        }
    }

    private func connected(_ slot: Slot) throws -> WatchedConnection {
        if let current = slot.connection.withLock({ $0 }), !current.isClosed { return current }
        let id = opened.add(1, ordering: .relaxed).newValue
        // The connection's own timeout bounds reaching the server, and `settingUp` the settings.
        let opening = connector.connect(id: id, settingUp: Self.deadline, prepare: prepare)
        let fresh = WatchedConnection(try opening.wait())
        slot.connection.withLock { $0 = fresh }
        return fresh
    }

    /// How long a blocking call waits for one answer (a connection, a statement's rows) before
    /// it gives up and closes the connection: past the server's own bounds (`statement_timeout`
    /// 60 s, `lock_timeout` 30 s), so only a server that neither answers nor closes meets it. A
    /// connection that closes fails its wait at once (``WatchedConnection``).
    static let deadline = TimeAmount.seconds(90)

    /// The statements of one call, on its connection.
    struct Statements {
        let watched: WatchedConnection
        let logger: Logger

        var connection: PostgresConnection { watched.connection }

        /// Runs one statement; its rows.
        @discardableResult
        func run(_ query: PostgresQuery) throws -> [PostgresRow] {
            let (connection, logger) = (self.connection, self.logger)
            return try watched.answer(within: BlockingPostgres.deadline) { answered in
                connection.query(query, logger: logger).cascade(to: answered)
            }.wait().rows
        }

        /// The first column of the first row, if there is one.
        func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) throws -> T? {
            try run(query).first?.decode(T.self)
        }
    }
}
