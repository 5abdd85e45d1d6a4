import NIOCore
import PostgresNIO
import Synchronization

/// A PostgreSQL connection whose every awaited answer ends: when the server answers, when the
/// connection closes, or after a bound (then the connection is closed too).
///
/// Why: postgres-nio hands a query to its channel without a promise for the write, so a query
/// issued as the channel closes is dropped with the write's failure and its answer never comes;
/// closing the connection afterwards does not complete it either. A relay's batch waited so for
/// good after PostgreSQL restarted under load: a thread dump showed it in the wait 135 s on, past
/// a deadline that only closed the connection, and the member's session, held open by it, made
/// every later session of that member a refused duplicate. Here one close handler per connection
/// fails whatever is awaited on it, and an answer asked for after the close fails at once.
final class WatchedConnection: Sendable {
    let connection: PostgresConnection

    private struct Waits {
        var closed = false
        var next = 0
        var failing: [Int: @Sendable (PostgresProblem) -> Void] = [:]
    }
    private let waits = Mutex(Waits())

    private static let closedFirst = PostgresProblem("the connection closed before the server answered")

    /// Watches `connection` (which the caller closes in the end, as postgres-nio requires: the
    /// close handler holds this object until then).
    init(_ connection: PostgresConnection) {
        self.connection = connection
        connection.closeFuture.whenComplete { [self] _ in
            let failing = waits.withLock { waits in
                waits.closed = true
                defer { waits.failing = [:] }
                return Array(waits.failing.values)
            }
            for fail in failing { fail(Self.closedFirst) }
        }
    }

    var isClosed: Bool { connection.isClosed }

    /// The answer `start` completes `promise` with, or a failure once the connection closes or
    /// `limit` passes (the connection is then closed: a server that neither answers nor closes).
    /// A body cut off so may go on waiting for its own answer; it holds nothing but its task.
    ///
    /// All of it (the registration, the deadline, `start`, the clean-up) runs in one turn of the
    /// connection's event loop: from a blocking thread, each of those steps would be a hop of
    /// its own to the loop, several per statement on the relay's write path.
    func answer<T: Sendable>(
        within limit: TimeAmount,
        _ start: @escaping @Sendable (_ promise: EventLoopPromise<T>) -> Void
    ) -> EventLoopFuture<T> {
        let loop = connection.eventLoop
        let promise = loop.makePromise(of: T.self)
        let watch = { @Sendable [self] in
            let id = waits.withLock { waits -> Int? in
                guard !waits.closed else { return nil }
                waits.next += 1
                waits.failing[waits.next] = { promise.fail($0) }
                return waits.next
            }
            guard let id else { return promise.fail(Self.closedFirst) }
            let deadline = loop.scheduleTask(in: limit) { [connection] in
                // Closed first, so that the caller woken by the failure finds it closed.
                connection.closeLater()
                promise.fail(
                    PostgresProblem("no answer within \(limit.nanoseconds / 1_000_000) ms: the connection is closed")
                )
            }
            promise.futureResult.whenComplete { [self] _ in
                deadline.cancel()
                waits.withLock { _ = $0.failing.removeValue(forKey: id) }
            }
            start(promise)
        }
        if loop.inEventLoop { watch() } else { loop.execute(watch) }
        return promise.futureResult
    }
}

extension PostgresConnection {
    /// Closes the connection without waiting, keeping it alive until it is closed (postgres-nio
    /// asserts on one released while still open).
    func closeLater() {
        close().whenComplete { _ in withExtendedLifetime(self) {} }
    }
}
