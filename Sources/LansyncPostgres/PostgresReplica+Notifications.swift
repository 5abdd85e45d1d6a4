public import LansyncStore
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
    public func commitsElsewhere() -> AsyncStream<CommitElsewhere>? {
        let (stream, continuation) = AsyncStream<CommitElsewhere>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(10))
                continuation.yield(.statements)
            }
        }
        let task = Task { [self] in
            var failures = 0
            while !Task.isCancelled {
                do {
                    let connection = try await database.connector.connect(id: 0).get()
                    do {
                        try await connection.listen(on: schema) { notifications in
                            heard.withLock { $0.listening = true }
                            // What was committed before the listening began.
                            continuation.yield(.statements)
                            continuation.yield(.replica)
                            failures = 0
                            for try await notification in notifications {
                                let (from, kind) = Self.parse(notification.payload)
                                guard from != tag else { continue }
                                heard.withLock { $0.count += 1 }
                                continuation.yield(kind)
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
                continuation.yield(.replica)
                try? await Task.sleep(for: .seconds(1))
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            ticker.cancel()
        }
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
