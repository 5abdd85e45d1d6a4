import PostgresNIO
import Synchronization

// Telling every relay process on one replica what another committed: each write transaction
// that changed what the replica holds sends a notification on the replica's channel (its
// schema's name) with the tag of the process that wrote it, delivered when it commits; each
// process listens on a connection of its own.
extension PostgresReplica {
    /// Other processes' commits to this replica that changed what it holds, as they happen (a
    /// few milliseconds after each commit), for as long as the stream is read; this process's own
    /// are left out (the node knows of them). While the listening connection is lost the stream
    /// yields once a second (the node then reads the version vector), and once again when it is
    /// back, for what came meanwhile.
    public func commitsElsewhere() -> AsyncStream<Void>? {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let task = Task { [self] in
            var failures = 0
            while !Task.isCancelled {
                do {
                    let connection = try await database.connector.connect(id: 0).get()
                    do {
                        try await connection.listen(on: schema) { notifications in
                            heard.withLock { $0.listening = true }
                            // What was committed before the listening began.
                            continuation.yield()
                            failures = 0
                            for try await notification in notifications where notification.payload != tag {
                                heard.withLock { $0.count += 1 }
                                continuation.yield()
                            }
                        }
                    } catch {
                        heard.withLock { $0.listening = false }
                        try? await connection.close()
                        throw error
                    }
                    heard.withLock { $0.listening = false }
                    try? await connection.close()
                } catch {
                    if !Task.isCancelled, failures == 0 {
                        database.connector.logger.warning(
                            "stopped hearing of other relay processes' commits (\(PostgresProblem(error))): reading the replica every second until it is back"
                        )
                    }
                    failures += 1
                }
                continuation.yield()
                try? await Task.sleep(for: .seconds(1))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// What this process heard of other processes' commits: whether it listens now, and how many
/// it heard (``PostgresReplica/quickChangeMark()`` reads it).
struct HeardCommits: Sendable {
    var listening = false
    var count = 0
}
