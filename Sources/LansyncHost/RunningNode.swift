public import LansyncNode
import LansyncReplica
import LansyncStore

/// A node running in this process, as the services beside it (the local API) use it: its replica
/// (an edit through it tells the node at once, in process), its status, its change
/// notifications, the address the API is announced at, and the node's thread pool for blocking
/// work. Services get it from ``DataDirectory/runNode(_:logger:alongside:)``.
public struct RunningNode: Sendable {
    let node: Node
    /// The node's replica; edits through it are pushed to peers at once.
    public let replica: LocalReplica

    init(_ node: Node, store: ReplicaStore, directory: DataDirectory) {
        self.node = node
        var directory = directory
        directory.changed = { [node] in node.replicaChanged() }
        replica = LocalReplica(directory, store: store)
    }

    /// What `status` shows of the running node.
    public func status() async throws -> NodeStatus { try await node.status() }

    /// Wakes on every change the replica commits (local or merged) until ``stopWatchingChanges(_:)``.
    public func watchChanges() -> (id: Int, changes: AsyncStream<Void>) { node.watchChanges() }

    public func stopWatchingChanges(_ id: Int) { node.stopWatchingChanges(id) }

    /// Wakes each time peers' acknowledgements are recorded (items edited here may have changed
    /// sync state) until ``stopWatchingAcknowledgements(_:)``.
    public func watchAcknowledgements() -> (id: Int, changes: AsyncStream<Void>) { node.watchAcknowledgements() }

    public func stopWatchingAcknowledgements(_ id: Int) { node.stopWatchingAcknowledgements(id) }

    /// Says where the node's local API listens (`status` shows it; `lansync ui` links to it).
    public func announceAPI(_ address: String?) { node.announceAPI(address) }

    /// Runs `work`, which only reads the replica, on the node's read threads, never on the
    /// threads that serve requests; it does not wait behind writes.
    public func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await node.blocking(work)
    }

    /// Runs `work`, which writes the replica, on the node's write thread: writes go one at a
    /// time, and one that waits for another process's lock holds no read thread.
    public func writing<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await node.writing(work)
    }
}
