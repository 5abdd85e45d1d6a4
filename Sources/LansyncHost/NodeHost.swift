import Foundation
public import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncTransport
import LansyncWire
public import Logging
import ServiceLifecycle

extension DataDirectory {
    /// Runs this directory's node (or relay) until SIGINT or SIGTERM, holding the node lock.
    ///
    /// Damage is refused, never served: SQLite's quick check runs before anything is read from
    /// the file, and a damaged replica does not start.
    /// Something that runs beside the node (the local API), started once the node listens: an
    /// error from it stops the node; one that returns leaves the node running without it.
    public typealias NodeService = @Sendable (RunningNode) async throws -> Void

    public func runNode(
        _ options: NodeOptions,
        logger: Logger,
        alongside services: [NodeService] = []
    ) async throws {
        MemoryPolicy.apply()
        let store = try open()
        let lock = try NodeLock(directory: self)
        defer { lock.release() }
        let node = try prepareNode(options, store: store, logger: logger)
        let group = NodeServices.group(
            RunningNode(node, store: store, directory: self),
            alongside: services,
            logger: logger
        )
        // Beside the group's own graceful shutdown on the same signals: the transaction under way
        // stops at once, and the process ends if the node has not stopped within a second.
        let signals = Self.stopOnSignals(store: store, logger: logger, socket: controlSocketPath)
        defer { signals.forEach { $0.cancel() } }
        do {
            try await group.run()
        } catch {
            throw HostError("node stopped: \(TransportError.describing(error))")
        }
    }

    /// The node for this directory, once the directory is private and the replica passed the
    /// quick check.
    private func prepareNode(_ options: NodeOptions, store: ReplicaStore, logger: Logger) throws -> Node {
        for change in tightenPermissions() { logger.notice("made the data directory private: \(change)") }
        let check = try store.quickCheck()
        if let damage = store.damage ?? check.problems.first {
            throw HostError(
                StoreError.corrupt(path: store.path, detail: damage).description
                    + "; the node does not start on a damaged replica"
            )
        }
        var options = options
        options.controlSocketPath = controlSocketPath
        options.admitting = try admittingAuthority()
        options.retireAuthority = { [self] in try dropAuthorityKey() }
        return try Node(options: options, store: store, identity: try tlsIdentity(), logger: logger)
    }

    /// On SIGINT or SIGTERM (which also shut the service group down): interrupts the transaction
    /// under way (it rolls back) and ends the process if the node has not stopped within
    /// ``stopDeadline``.
    static func stopOnSignals(
        store: ReplicaStore? = nil,
        logger: Logger,
        socket: String
    ) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                // A transaction under way (a peer's batch, an import's) stops now and rolls back.
                store?.interrupt()
                Self.stopWithin(Self.stopDeadline, logger: logger, socket: socket)
            }
            source.resume()
            return source
        }
    }
}

extension DataDirectory {
    /// How long a node may take to stop once told to: a stop asked for is a stop within a second,
    /// whatever the node is doing.
    static let stopDeadline: Duration = .milliseconds(800)

    /// Ends the process after `deadline` if the node has not stopped by then (work that no
    /// cancellation reaches). Safe for the replica: every change committed is durable, and the
    /// one under way rolls back as after a crash; the node lock goes with the process.
    static func stopWithin(_ deadline: Duration, logger: Logger, socket: String) {
        let nanoseconds = Int(deadline / .nanoseconds(1))
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
            logger.warning(
                "node still busy \(nanoseconds / 1_000_000) ms after it was told to stop: stopping now (every committed change is kept; the one under way rolls back)"
            )
            unlink(socket)
            unlink(ControlClient.nudgeSocketPath(control: socket))
            fflush(nil)
            _exit(0)
        }
    }
}

extension DataDirectory {
    /// `lansync sync`: exchanges everything with each peer once (``OneShotSync``), then nudges a
    /// node running on this directory to pass on what arrived.
    public func syncOnce(
        with peers: [PeerAddress],
        timeout: Duration,
        progress: @escaping @Sendable (PeerAddress, SyncProgress) -> Void = { _, _ in }
    ) async throws -> [SyncResult] {
        let store = try open()
        let results = try await OneShotSync.run(
            store: store,
            identity: try tlsIdentity(),
            peers: peers,
            timeout: timeout
        ) { peer, p in
            progress(
                peer,
                SyncProgress(counters: p.counters, expecting: p.expecting, receivedOfExpected: p.receivedOfExpected)
            )
        }
        nudgeNode()
        return results.map(SyncResult.init)
    }
}

/// How far a one-shot sync with a peer has got.
public struct SyncProgress: Sendable {
    public let counters: SessionCounters
    /// About how many field states the peer's delta under way holds, when it said so.
    public let expecting: Int?
    /// How many of those arrived.
    public let receivedOfExpected: Int
}

/// How a one-shot sync with one peer ended.
public struct SyncResult: Sendable {
    public let peer: PeerAddress
    /// The node that answered there, if one did.
    public let nodeID: NodeID?
    public let name: String?
    public let counters: SessionCounters
    /// Why it failed; nil when it did not.
    public let error: String?
    /// True when this replica and the peer are up to date with each other.
    public let succeeded: Bool

    init(_ result: OneShotSync.Result) {
        peer = result.peer
        nodeID = result.outcome?.peer?.nodeID
        name = result.outcome?.peer?.name
        counters = result.outcome?.counters ?? SessionCounters()
        error = result.error
        succeeded = result.succeeded && result.outcome?.peer != nil
    }
}
