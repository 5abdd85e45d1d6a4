import Foundation
import LansyncIdentity
public import LansyncNode
import LansyncReplica
public import LansyncStore
public import LansyncTransport

/// A machine's data directory: the replica, the cluster secret, this node's identity, the node's
/// lock and control socket. Everything the CLI (and later the local API) does to a replica goes
/// through here, so the rules about copied directories, rolled-back writers and nudging a running
/// node hold for every front end.
public struct DataDirectory: Sendable {
    public let path: String
    /// Where the host says what a user should know but that is no error (a copied directory took a
    /// new identity, a restored replica a new writer). The CLI prints these on stderr.
    public var note: @Sendable (String) -> Void
    /// Set in a running node's own process (the local API): a change is told to the node
    /// directly. Elsewhere (the CLI) it is nil, and the node is nudged over its control socket.
    public var changed: (@Sendable () -> Void)?

    public init(path: String, note: @escaping @Sendable (String) -> Void = { _ in }) {
        self.path = path
        self.note = note
    }

    /// The directory as the contract resolves it: `dir` (--dir), else `$LANSYNC_DIR`, else
    /// `~/.lansync` ($HOME first, as a shell's `~` does).
    public static func resolve(
        dir: String?,
        environment: [String: String]? = nil,
        note: @escaping @Sendable (String) -> Void = { _ in }
    ) -> DataDirectory {
        let environment = environment ?? ProcessInfo.processInfo.environment
        if let dir { return DataDirectory(path: dir, note: note) }
        if let env = environment["LANSYNC_DIR"], !env.isEmpty { return DataDirectory(path: env, note: note) }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return DataDirectory(path: home + "/.lansync", note: note)
    }

    public var replicaPath: String { path + "/" + ReplicaStore.fileName }
    /// Versions kept per field in `history` unless `init --history` says otherwise.
    public static let defaultHistoryLimit = ReplicaConstants.defaultHistoryLimit
    public var clusterPath: String { path + "/cluster.pem" }
    public var nodePath: String { path + "/node.pem" }
    public var controlSocketPath: String { path + "/control.sock" }
    public var lockPath: String { path + "/node.lock" }

    /// This node's TLS credentials.
    public func tlsIdentity() throws(HostError) -> TLSIdentity {
        let nodePEM: String
        let clusterPEM: String
        for file in [nodePath, clusterPath] {
            if let problem = FileAccess.readProblem(file) { throw HostError(problem) }
        }
        do {
            nodePEM = try String(contentsOfFile: nodePath, encoding: .utf8)
            clusterPEM = try String(contentsOfFile: clusterPath, encoding: .utf8)
        } catch {
            throw HostError(
                "cannot read this node's identity (node.pem, cluster.pem) in \(path): restore them from a backup, or 'lansync init' a new directory"
            )
        }
        do {
            return try TLSIdentity(nodePEM: nodePEM, clusterPEM: clusterPEM)
        } catch {
            throw HostError(
                "cannot load this node's identity from \(path) (\(TransportError.describing(error))): the directory may be damaged; 'lansync init' a new one"
            )
        }
    }

    /// Opens the replica. If the directory was copied (or moved) from where it was created, this
    /// copy first takes a new node identity, issued with the cluster secret it holds, and says so:
    /// two copies must never write under one node id. A node keeps a pool of connections; a
    /// command, which does one thing and exits, one (``ReplicaStore/Connections``).
    public func open(_ connections: ReplicaStore.Connections = .pool) throws -> ReplicaStore {
        try refuseIfReplicaInPostgres()
        let store = try ReplicaStore.open(path: replicaPath, connections: connections)
        let info = try store.info()
        if info.fingerprint != fingerprint {
            try reidentify(store, info: info)
        }
        signWrites(of: store, cluster: info.clusterID)
        return store
    }

    /// Has `store` sign its own writes with this node's key, loaded at its first write (a
    /// command that only reads never loads it).
    func signWrites(of store: ReplicaStore, cluster: NodeID) {
        let nodePath = nodePath
        store.signing.use(loading: { MemberWriteSigner.load(nodePEM: nodePath, cluster: cluster) })
    }

    /// Tells a node running on this directory that the replica changed, so it pushes the change
    /// at once (best effort: ``ControlClient/nudge(path:)``).
    public func nudgeNode() {
        if let changed { return changed() }
        ControlClient.nudge(path: controlSocketPath)
    }

    /// What the node running on this directory answers for its status, waiting at most
    /// `waitingSeconds`.
    public func runningNodeStatus(waitingSeconds: Int = StatusWait.seconds) -> RunningNodeAnswer {
        switch ControlClient.statusAnswer(path: controlSocketPath, timeoutSeconds: waitingSeconds) {
        case .answered(let status): .answered(status)
        case .noNode: .noNode
        case .notAnswering: .notAnswering
        case .failed(let message): .failed(message)
        }
    }

    /// The status: the running node's, else what the replica alone says. A node that runs but
    /// does not answer within `waitingSeconds` is shown running and not answering
    /// (``NodeStatus/answering``), with what the replica alone says: never as no node at all. A
    /// node that answers with an error throws it.
    public func status(of store: ReplicaStore, waitingSeconds: Int = StatusWait.seconds) throws -> NodeStatus {
        switch runningNodeStatus(waitingSeconds: waitingSeconds) {
        case .answered(let live):
            return live
        case .noNode:
            return try StatusReport.make(store: store, running: false, listen: nil, peers: nil)
        case .notAnswering:
            var status = try StatusReport.make(store: store, running: true, listen: nil, peers: nil)
            status.answering = false
            return status
        case .failed(let message):
            throw HostError(
                "the node running on \(path) could not make its status (\(message)): its log says more; 'lansync check' reads the replica"
            )
        }
    }
}

/// What the node running on a data directory said when asked for its status.
public enum RunningNodeAnswer: Sendable {
    /// Its status.
    case answered(NodeStatus)
    /// Nothing listens on its control socket: no node runs on the directory.
    case noNode
    /// A node runs and gave no status in the time allowed: busy (its first status reads every
    /// item) or stuck.
    case notAnswering
    /// The node answered that it could not make its status, with its message.
    case failed(String)
}

/// How long `status` waits for a running node's answer by default. A node's first status reads
/// every item for the digest (about 2 s at 100,000 items on a 2-core machine, several times
/// that in a debug build or beside a busy sync), so a short wait would often give up on a node
/// that is only working.
public enum StatusWait {
    public static let seconds = 30
}
