import CoreMetrics
import Foundation
import LansyncCore
import LansyncDiscovery
import LansyncIdentity
import LansyncJSON
public import LansyncReplica
public import LansyncTransport
import LansyncWire
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A running lansync node: accepts peers, dials its configured peers (reconnecting with backoff
/// and jitter), pushes every change of the replica to every connected peer at once, answers the
/// CLI on its control socket, and stops cleanly when its task is cancelled.
public final class Node: Sendable {
    public let options: NodeOptions
    let store: any ReplicaStorage
    let identity: TLSIdentity
    let info: ReplicaInfo
    let hub = ChangeHub()
    /// Wakes when the peer table is saved: peers' acknowledgements moved the sync state of the
    /// items edited here (``watchAcknowledgements()``).
    let acknowledgements = ChangeHub()
    private let apiAddress = NIOLockedValueBox<String?>(nil)
    let io = BlockingIO()
    /// Background upkeep of the replica (the search texts, the digest `status` shows): its own
    /// thread, so that this work never keeps a session's or the local API's reads and writes
    /// waiting for one of ``io``'s.
    let upkeep = BlockingIO(threads: 1)
    /// Sessions running now (at most ``NodeOptions/maxSessions``).
    let sessions = NIOLockedValueBox(0)
    /// True while a rejoin empties the replica (``rejoin(from:)``).
    let rejoining = NIOLockedValueBox(false)
    /// How many times a rejoin emptied the replica under running sessions. A session that said
    /// hello before the last one told its peer a version vector the replica no longer holds, so
    /// it must not take the stream the peer computes from it (``observer(of:log:token:source:epoch:outsideView:told:)``).
    let rejoins = NIOLockedValueBox(0)
    /// Retired writers fold (``foldRetiredWriters()``): the vector the last collection round read
    /// (a writer that moved since waits), and whether folds were taken since that the peers
    /// have not been told (the sessions open again, once a round).
    let foldRound = NIOLockedValueBox<(vector: VersionVector?, toTell: Bool)>((nil, false))
    /// Collection rounds finished since the node started (``collectPeriodically()``), for status.
    let collectionRounds = NIOLockedValueBox(0)
    /// Addresses members pass on in their hellos, and their dial loops.
    let gossiped = GossipedAddresses()
    /// Which members this node keeps sessions with once the cluster is past a full mesh
    /// (Docs/SCALE.md).
    let view: ViewKeeper
    /// The port this node accepts peers on, once it listens (its hello says it).
    let listenPort = NIOLockedValueBox<Int>(0)
    /// When a session last moved field states either way: the search texts wait for quiet.
    let lastTraffic = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    /// This node's own report as last signed (``ownReport()``), the members' reports whose
    /// signatures were verified (``CheckedReports``), and the older peers already told that their
    /// unsigned reports are not taken.
    let signedReports = NIOLockedValueBox<
        (own: Hello.SignedReport?, checked: CheckedReports, toldUnsigned: Set<NodeID>)
    >(
        (nil, CheckedReports(), [])
    )
    let digests = ReplicaDigest.Cache()
    public let registry: PeerRegistry
    /// The relay's authority (nil on ordinary nodes).
    let authority: Authority?
    /// The relays this node was given and the one it uses now (nil without `--relay`).
    let relays: NIOLockedValueBox<RelayRoster?>
    /// One line per thing worth knowing: sessions starting and ending, refusals, discovery,
    /// membership news, errors (Docs/OPERATIONS.md, "Logs").
    let logger: Logger
    let metrics = NodeMetrics()
    /// Connections closed before they proved a membership (no TLS, silence, a bad handshake):
    /// each address and reason logged at most once a minute, so a flood cannot fill the log.
    let strangers = RefusedConnections()
    /// Lines strangers can cause (connections closed before a session, discovery changes): at
    /// most this many a minute each, whatever the number of addresses or adverts.
    let strangerLines = LineBudget(perMinute: 30)
    let discoveryLines = LineBudget(perMinute: 30)
    /// Answers machines joining with an invite.
    let joinDesk: JoinDesk
    /// Connections refused for their certificate, for `status` and the log.
    let refused = RefusedConnections()
    /// Lines about refused certificates (another cluster's, a revoked one): at most 30 a minute
    /// in all, on top of once a minute per address and reason (``refused``).
    let refusalLines = LineBudget(perMinute: 30)
    /// Lines a member's sessions cause (started, ended, refused): at most 60 a minute per peer
    /// (30 sessions) and 300 in all, so a member reconnecting in a loop cannot fill the log.
    let sessionLines = LogGate(perSource: 60, perMinute: 300)
    /// The cluster authority's statements: revoked identities (refused, and told to every peer)
    /// and the machines that admit others.
    let statements: ClusterStatements

    public init(
        options: NodeOptions,
        store: any ReplicaStorage,
        identity: TLSIdentity,
        logger: Logger
    ) throws {
        self.options = options
        self.store = store
        self.identity = identity
        self.logger = logger
        info = try store.info()
        guard info.nodeID == identity.nodeID else {
            throw TransportError(
                "node.pem is for node \(identity.nodeID.short) but the replica belongs to \(info.nodeID.short)"
            )
        }
        registry = PeerRegistry(
            store: store,
            io: io,
            localNode: info.nodeID,
            logger: logger,
            acknowledgements: acknowledgements
        )
        authority =
            options.role == .relay
            ? Authority(
                store: store,
                io: io,
                policy: options.settlePolicy,
                gate: options.settlingGate?(info),
                logger: logger
            ) : nil
        statements = ClusterStatements(store: store, io: io, trust: identity.trust, own: info.nodeID)
        relays = NIOLockedValueBox(RelayRoster(options.relays))
        view = ViewKeeper(me: info.nodeID, limits: options.view)
        joinDesk = JoinDesk(
            store: store,
            io: io,
            me: info.nodeID,
            statements: statements,
            admitting: options.admitting,
            logger: logger
        )
    }

    /// Runs until the calling task is cancelled. `ready` is called with the bound port.
    public func run(ready: @Sendable (Int) -> Void = { _ in }) async throws {
        // A restored or rebooted replica takes its new writer now, before any hello, so that peers
        // see a new incarnation and do not resume streams it may no longer hold.
        try store.renewWriterIfUnproven()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer {
            SafeFile.removeFile(options.controlSocketPath)
            SafeFile.removeFile(NudgeServer.path(control: options.controlSocketPath))
        }
        var failure: (any Error)?
        do {
            let transport = try Transport(identity: identity, group: group)
            let listener = try await transport.listen(host: options.listen.host, port: options.listen.port)
            await open(listener)
            ready(listener.port)
            try await withThrowingDiscardingTaskGroup { tasks in
                await self.addTasks(to: &tasks, listener: listener, transport: transport, group: group)
            }
        } catch is CancellationError {
        } catch {
            failure = error
        }
        try? await group.shutdownGracefully()
        await io.shutdown()
        await upkeep.shutdown()
        if let failure { throw failure }
        logger.notice("node stopped")
    }

    /// What the node does once it listens, before its tasks start: the peers it knows and is
    /// told of, what the replica holds settled (on a relay) and its statements acted on.
    private func open(_ listener: Transport.Listener) async {
        await registry.load()
        let listenAddress = PeerAddress(host: listener.host, port: listener.port).description
        listenPort.withLockedValue { $0 = listener.port }
        await registry.setListenAddress(listenAddress)
        for peer in options.staticPeers { await registry.configure(address: peer.description, source: .configured) }
        logger.notice(
            "\(options.role == .relay ? "relay" : "node") \(info.nodeID.short) (\(info.nodeName)) listening on \(listenAddress)"
        )
        if let authority { _ = await authority.settleAll() }
        await signHeldOwnWrites()
        // What the replica holds is old news, except an admitter set this machine is not in,
        // and writes a cut refuses that came in before the node stopped.
        let held = await statements.reload()
        if let admitters = held.admitters { await admittersChanged(admitters) }
        await statements.overruleRevokedWrites(news: held)
        // Also gives the hub its first reading of the version vector.
        await announceChange()
    }

    /// The node's tasks, which run until it stops: accepting, keeping its peers and relays
    /// connected, its rounds (changes, anti-entropy, collection, search texts), gossip, the
    /// view, discovery, and its control and nudge sockets.
    private func addTasks(
        to tasks: inout ThrowingDiscardingTaskGroup<any Error>,
        listener: Transport.Listener,
        transport: Transport,
        group: MultiThreadedEventLoopGroup
    ) async {
        tasks.addTask { try await self.accept(listener) }
        for peer in options.staticPeers {
            tasks.addTask { await self.keepConnected(.configured(peer), transport: transport) }
        }
        if !options.relays.isEmpty {
            for relay in options.relays { await registry.configure(address: relay.description, source: .relay) }
            tasks.addTask { await self.keepConnected(.relay, transport: transport) }
        }
        if let authority, let gate = authority.gate {
            // Settling apart from the lease's loop, which must keep renewing meanwhile.
            tasks.addTask { await gate.keep { self.settleSoon() } }
        }
        tasks.addTask { try await self.pollForChanges() }
        tasks.addTask { await self.followCommitsElsewhere() }
        tasks.addTask { try await self.antiEntropy() }
        tasks.addTask { try await self.collectPeriodically() }
        tasks.addTask { try await self.writeSearchTextsWhenQuiet() }
        tasks.addTask { await self.registry.runPersistence() }
        tasks.addTask { await self.followGossip(transport: transport) }
        if options.role == .peer { tasks.addTask { await self.keepTheView(transport: transport) } }
        if let discovery = options.discovery {
            tasks.addTask { await self.discover(with: discovery, port: listener.port, transport: transport) }
        } else {
            await registry.setDiscoveryState(.off)
        }
        tasks.addTask {
            try await ControlServer.serve(
                path: self.options.controlSocketPath,
                group: group,
                handle: { await self.control($0) }
            )
        }
        let (nudges, nudged) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        tasks.addTask {
            try await NudgeServer.serve(path: NudgeServer.path(control: self.options.controlSocketPath), group: group) {
                [hub = self.hub] in
                hub.notifyUnread()
                nudged.yield()
            }
        }
        // The vector for the hub after nudges, one read for any number of them.
        tasks.addTask { for await _ in nudges { await self.learnVersion() } }
    }

    private func accept(_ listener: Transport.Listener) async throws {
        try await withThrowingDiscardingTaskGroup { sessions in
            try await listener.channel.executeThenClose { inbound in
                for try await pending in inbound {
                    sessions.addTask {
                        let accepted: InboundConnection
                        do { accepted = try await pending.get() } catch let error as TransportError {
                            if error.refusal != nil {
                                self.noteRefused(error, address: error.peer ?? "?", dialled: false)
                            } else {
                                self.noteStranger(address: error.peer ?? "?", reason: error.description)
                            }
                            return
                        } catch {
                            return
                        }
                        switch accepted {
                        case .peer(let connection):
                            _ = await self.session(connection, address: connection.remoteAddress, source: .inbound)
                        case .joiner(let connection):
                            await self.joinDesk.serve(connection)
                        }
                    }
                }
            }
        }
    }

    /// Records a connection refused for its certificate (for `status`), and logs it unless the
    /// same address was logged for the same reason within the minute.
    func noteRefused(_ error: TransportError, address: String, dialled: Bool) {
        metrics.refused(error.refusal?.name ?? "certificate")
        guard refused.note(address: address, reason: error.description) else { return }
        let budget = refusalLines.take()
        guard budget != .drop else { return }
        logger.warning(
            "refused \(dialled ? "the connection to" : "a connection from") \(address): \(error.description)\(budget == .lastThisMinute ? " (no more such lines this minute)" : "")"
        )
    }

    /// Records a connection closed before it proved anything (not TLS, silent, a failed
    /// handshake, a full house), and logs it unless the same address was logged for the same
    /// reason within the minute.
    func noteStranger(address: String, reason: String, metric: String = "handshake") {
        metrics.refused(metric)
        guard strangers.note(address: address, reason: reason) else { return }
        let budget = strangerLines.take()
        guard budget != .drop else { return }
        logger.info(
            "closed a connection from \(address) before a session: \(reason) (said at most once a minute per address\(budget == .lastThisMinute ? "; no more such lines this minute" : ""))",
            metadata: ["event": "refused", "address": "\(address)", "reason": "\(metric)"]
        )
    }

    /// Records where the local API listens, for `status`.
    public func announceAPI(_ address: String?) { apiAddress.withLockedValue { $0 = address } }

    /// What `status` shows of this running node.
    public func status() async throws -> NodeStatus {
        let peers = await registry.snapshot()
        let listen = await registry.listenAddress
        let discovery = await registry.discoveryState
        let store = self.store
        let digests = self.digests
        let refusedNow = refused.snapshot
        var viewNow = options.role == .peer ? await view.status() : nil
        viewNow?.flood = hub.flood
        // The digest on the upkeep thread, not the node's I/O pool: after a large change it reads
        // every changed item (seconds in a debug build at 25,000), and on the I/O pool it held
        // one of its two threads while the page's and the API's reads waited behind it.
        let digest = try await upkeep.run { try digests.digest(store) }
        var status = try await io.run {
            try StatusReport.make(
                store: store,
                running: true,
                listen: listen,
                peers: peers,
                discovery: discovery,
                digest: digest,
                refused: refusedNow
            )
        }
        status.api = apiAddress.withLockedValue { $0 }
        status.collection?.rounds = collectionRounds.withLockedValue { $0 }
        status.view = viewNow
        let relayConnected = await relayConnected()
        status.relays = relays.withLockedValue { $0.map { NodeStatus.Relays($0, connected: relayConnected) } }
        if let gate = authority?.gate { status.authority = await gate.standing() }
        return status
    }

    /// A stream that yields once per (coalesced) change of the replica, local or merged, until
    /// ``stopWatchingChanges(_:)``: how the local API's change feed wakes.
    public func watchChanges() -> (id: Int, changes: AsyncStream<Void>) { hub.subscribe() }

    public func stopWatchingChanges(_ id: Int) { hub.unsubscribe(id) }

    /// Wakes (coalesced) each time what this node knows its peers hold is saved, until
    /// ``stopWatchingAcknowledgements(_:)``: the items edited here may have changed sync state
    /// (``ItemSync``). How the local API's feed tells the page without it polling.
    public func watchAcknowledgements() -> (id: Int, changes: AsyncStream<Void>) { acknowledgements.subscribe() }

    public func stopWatchingAcknowledgements(_ id: Int) { acknowledgements.unsubscribe(id) }

    /// The replica changed in this process (the local API's edit): every session is told at once,
    /// with no round trip through the control socket.
    public func replicaChanged() { Task { await announceChange() } }

    /// Runs `work` (blocking SQLite reads) on the node's read threads, never on the threads that
    /// drive the network or Swift's cooperative pool.
    public func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await io.run(work)
    }

    /// Runs `work` (a blocking SQLite write) on the node's write thread (``BlockingIO``).
    public func writing<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await io.write(work)
    }

    private func control(_ request: ControlRequest?) async -> String {
        switch request?.op {
        case .nudge?:
            await announceChange()
            return #"{"ok":true}"#
        case .statements?:
            // `lansync revoke` and `cluster admitters`: acted on at once.
            await statementsLearned(await statements.reload())
            return #"{"ok":true}"#
        case .status?:
            return (try? await status().json) ?? #"{"error":"the replica could not be read"}"#
        case nil:
            return
                #"{"error":"unknown request: send {\"op\":\"status\"}, {\"op\":\"nudge\"} or {\"op\":\"statements\"}"}"#
        }
    }
}

/// A session's registry token, set once its hello has been claimed.
/// What a session claimed: the registry's token, and whether it counts in the view (its end is
/// then the view's to know).
final class TokenBox: Sendable {
    private let box = NIOLockedValueBoxInt()
    private let counted = NIOLockedValueBox(false)
    var value: Int? { box.get() }
    func set(_ v: Int) { box.set(v) }
    var inView: Bool { counted.withLockedValue { $0 } }
    func countInView() { counted.withLockedValue { $0 = true } }
}

/// A lock-protected optional Int.
struct NIOLockedValueBoxInt: Sendable {
    private let storage = NIOLockedValueBox<Int?>(nil)
    func get() -> Int? { storage.withLockedValue { $0 } }
    func set(_ v: Int) { storage.withLockedValue { $0 = v } }
}
