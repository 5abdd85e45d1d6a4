public import LansyncReplica
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import Synchronization

// Telling every relay process on one replica what another committed: each write transaction
// that changed what the replica holds sends a notification on the replica's channel (its
// schema's name) with the tag of the process that wrote it (`TAG`, or `TAG:statements` for the
// cluster's statements), delivered when it commits; each process listens on a connection of its
// own.
extension PostgresReplica {
    /// Other processes' commits to this replica that changed what it holds or the cluster's
    /// statements, as they happen (a few milliseconds after each commit), for as long as the
    /// stream is read; this process's own are left out (the node knows of them). While the
    /// listening connection is lost the stream says the replica may have changed once a second,
    /// and both may have once it is back, for what came meanwhile. The statements are also said
    /// to have changed every ten seconds whatever was heard: a listening connection gone
    /// half-open (behind a firewall) hears nothing and cannot tell, and a revocation must not wait
    /// on it. So the stream keeps only the newest 64 notices: one dropped while its reader is
    /// behind is made up by a later one of the same kind.
    ///
    /// The listening runs on an event loop, never on Swift's cooperative threads: a process
    /// whose cooperative threads are busy (a test process's blocking calls) still hears at once.
    public func commitsElsewhere() -> AsyncStream<CommitElsewhere>? {
        let (stream, continuation) = AsyncStream<CommitElsewhere>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let watch = CommitWatch(replica: self, continuation: continuation)
        watch.start()
        continuation.onTermination = { _ in watch.stop() }
        return stream
    }

    /// A notification's payload: the tag of the process that committed, and what changed.
    static func parse(_ payload: String) -> (tag: Substring, kind: CommitElsewhere) {
        let parts = payload.split(separator: ":", maxSplits: 1)
        return (parts.first ?? "", parts.count == 2 && parts[1] == "statements" ? .statements : .replica)
    }
}

/// What this process heard of other processes' commits: whether it listens now, and how many
/// it heard (``PostgresReplica/quickChangeMark()`` reads it).
struct HeardCommits: Sendable {
    var listening = false
    var count = 0
}

/// The listening connection of ``PostgresReplica/commitsElsewhere()``: opened, kept, and opened
/// again a second after it is lost, on one event loop, until stopped.
final class CommitWatch: Sendable {
    private let replica: PostgresReplica
    private let continuation: AsyncStream<CommitElsewhere>.Continuation
    private let loop: any EventLoop = PostgresConnection.defaultEventLoopGroup.any()
    private let state = NIOLockedValueBox<(stopped: Bool, connection: PostgresConnection?, failures: Int)>(
        (false, nil, 0)
    )
    private let ticker = NIOLockedValueBox<RepeatedTask?>(nil)

    init(replica: PostgresReplica, continuation: AsyncStream<CommitElsewhere>.Continuation) {
        self.replica = replica
        self.continuation = continuation
    }

    func start() {
        ticker.withLockedValue {
            $0 = loop.scheduleRepeatedTask(initialDelay: .seconds(10), delay: .seconds(10)) { [continuation] _ in
                continuation.yield(.statements)
            }
        }
        loop.execute { self.connect() }
    }

    func stop() {
        ticker.withLockedValue { $0?.cancel() }
        let connection = state.withLockedValue { state in
            state.stopped = true
            defer { state.connection = nil }
            return state.connection
        }
        connection?.closeLater()
    }

    private func connect() {
        guard !state.withLockedValue({ $0.stopped }) else { return }
        let (replica, continuation) = (self.replica, self.continuation)
        let listening = replica.database.connector.connect(id: 0, on: loop).flatMap { connection in
            connection.addListener(channel: replica.schema) { _, notification in
                let (from, kind) = PostgresReplica.parse(notification.payload)
                guard from != replica.tag else { return }
                replica.heard.withLock { $0.count += 1 }
                continuation.yield(kind)
            }
            // Watched: a LISTEN dropped as the server closes would leave this process neither
            // listening nor trying again (``WatchedConnection``).
            return WatchedConnection(connection).answer(within: PostgresConnector.settingUp) {
                (listened: EventLoopPromise<PostgresQueryResult>) in
                connection.query(
                    PostgresQuery(unsafeSQL: "LISTEN \"\(replica.schema)\""),
                    logger: replica.database.connector.logger
                ).cascade(to: listened)
            }
            .map { _ in connection }
            .flatMapErrorThrowing { error in
                connection.closeLater()
                throw error
            }
        }
        listening.whenComplete { result in
            switch result {
            case .success(let connection): self.listen(on: connection)
            case .failure(let error): self.lost(error)
            }
        }
    }

    private func listen(on connection: PostgresConnection) {
        let stopped = state.withLockedValue { state in
            if !state.stopped {
                state.connection = connection
                state.failures = 0
            }
            return state.stopped
        }
        guard !stopped else {
            connection.closeLater()
            return
        }
        replica.heard.withLock { $0.listening = true }
        // What was committed before the listening began.
        continuation.yield(.statements)
        continuation.yield(.replica)
        connection.closeFuture.whenComplete { _ in
            self.lost(PostgresProblem("the server closed the connection"))
        }
    }

    private func lost(_ error: any Error) {
        replica.heard.withLock { $0.listening = false }
        let (stopped, first) = state.withLockedValue { state in
            state.connection = nil
            state.failures += 1
            return (state.stopped, state.failures == 1)
        }
        guard !stopped else { return }
        if first {
            replica.database.connector.logger.warning(
                "stopped hearing of other relay processes' commits (\(PostgresProblem(error))): reading the replica every second until it is back"
            )
        }
        continuation.yield(.replica)
        loop.scheduleTask(in: .seconds(1)) { self.connect() }
    }
}
