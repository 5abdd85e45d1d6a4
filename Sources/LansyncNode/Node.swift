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
    private let sessions = NIOLockedValueBox(0)
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

    /// Advertises this node and dials the peers discovery finds, for as long as they are
    /// advertised or connected. An advert is only a hint: the TLS handshake proves who answers.
    private func discover(with discovery: any Discovery, port: Int, transport: Transport) async {
        let advertisement = Advertisement(
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            port: port,
            protocolMajor: ProtocolVersion.current.major
        )
        let events = discovery.start(advertisement)
        let seen = DiscoveredPeers()
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { dialers in
                for await event in events {
                    switch event {
                    case .found(let peer):
                        let addresses = peer.hosts.map { PeerAddress(host: $0, port: peer.port) }
                        guard !addresses.isEmpty else { continue }
                        let address = addresses.map(\.description).joined(separator: ", ")
                        await registry.discovered(peer.nodeID, addresses: addresses.map(\.description))
                        await view.learn(peer.nodeID, at: addresses, source: .mdns)
                        switch await seen.found(peer.nodeID, at: addresses) {
                        case .new:
                            metrics.discovery("found")
                            logDiscovery("found node \(peer.nodeID.short) at \(address)", "found", peer.nodeID)
                            dialers.addTask {
                                await self.keepConnected(.discovered(peer.nodeID, seen), transport: transport)
                            }
                        case .again:
                            // Its dial loop, and any session, went on: a flapping advert costs a line.
                            metrics.discovery("found")
                            logDiscovery(
                                "node \(peer.nodeID.short) is advertised again at \(address)",
                                "found",
                                peer.nodeID
                            )
                        case .readdressed:
                            logDiscovery("node \(peer.nodeID.short) is advertised at \(address)", "found", peer.nodeID)
                        case .known:
                            break
                        }
                    case .lost(let node):
                        metrics.discovery("lost")
                        logDiscovery("node \(node.short) is no longer advertised", "lost", node)
                        await seen.lost(node)
                        await registry.undiscovered(node)
                    case .available:
                        metrics.discovery("available")
                        logger.info("mDNS: advertising and browsing \(Advertisement.serviceType) through avahi-daemon")
                        await registry.setDiscoveryState(.running)
                    case .unavailable(let why):
                        metrics.discovery("unavailable")
                        logger.warning("mDNS unavailable: \(why)")
                        await registry.setDiscoveryState(.unavailable(why))
                    }
                }
            }
        } onCancel: {
            discovery.stop()
        }
    }

    /// Logs a peer found or lost on mDNS, within ``discoveryLines``.
    private func logDiscovery(_ text: String, _ change: String, _ node: NodeID) {
        let budget = discoveryLines.take()
        guard budget != .drop else { return }
        logger.info(
            "mDNS: \(text)\(budget == .lastThisMinute ? " (no more discovery lines this minute)" : "")",
            metadata: ["event": "discovery", "change": "\(change)", "node": "\(node.text)"]
        )
    }

    /// Runs one session and records what happened. A session outside the views (a round of
    /// anti-entropy) ends once both sides are up to date; every other one, the relay's included,
    /// lasts until a side closes it.
    func session(
        _ connection: PeerConnection,
        address: String,
        source: PeerSource,
        outsideView: Bool = false
    ) async -> SessionOutcome {
        let admitted = sessions.withLockedValue { count -> Bool in
            guard count < options.maxSessions else { return false }
            count += 1
            return true
        }
        guard admitted else {
            let busy = ProtocolError(.busy, "this node serves \(options.maxSessions) sessions already; try again later")
            noteStranger(address: address, reason: busy.description, metric: "busy")
            await answerWithoutSession(connection, busy)
            return SessionOutcome(error: busy)
        }
        defer { sessions.withLockedValue { $0 -= 1 } }
        return await admittedSession(
            connection,
            address: address,
            source: source,
            outsideView: outsideView
        )
    }

    private func admittedSession(
        _ connection: PeerConnection,
        address: String,
        source: PeerSource,
        outsideView: Bool
    ) async -> SessionOutcome {
        if let revoked = statements.revocation(of: connection.peerNodeID) {
            return await refuseRevoked(connection, revoked, address: address)
        }
        let channel = connection.channel.channel
        let link = SessionLink(peerID: connection.peerNodeID, outbound: connection.outbound) {
            channel.close(promise: nil)
        }
        return await runSession(
            link,
            address: address,
            source: source,
            outsideView: outsideView
        ) { runner in await runner.run(connection) }
    }

    /// Runs a session with `link`'s peer through `run` (on a connection, or from memory:
    /// ``session(inMemoryFrom:payloads:address:send:)``) and records what happened: the node's part
    /// of every session, whatever carries its frames.
    func runSession(
        _ link: SessionLink,
        address: String,
        source: PeerSource,
        outsideView: Bool,
        over run: (SessionRunner) async -> SessionOutcome
    ) async -> SessionOutcome {
        let peerID = link.peerID
        let log = SessionLog(
            logger: logger,
            metrics: metrics,
            lines: sessionLines,
            peerID: peerID,
            address: address,
            outbound: link.outbound
        )
        let (token, epoch) = (TokenBox(), rejoins.withLockedValue { $0 })
        let config = await sessionConfig(for: peerID, outsideView: outsideView)
        let runner = SessionRunner(
            store: store,
            io: io,
            hub: hub,
            config: config,
            certify: statements.certify,
            observer: observer(
                of: link,
                log: log,
                token: token,
                source: source,
                epoch: epoch,
                outsideView: outsideView,
                told: config.statements
            ),
            // Every node refuses what breaks ``Limits`` on arrival (overruled, never stored); a
            // relay may enforce lower limits for the whole cluster.
            refuse: (options.role == .relay ? options.relayLimits : RelayLimits.standard).refusal,
            revoked: { [statements] in statements.revokedWriters },
            writers: options.writerBounds,
            vouch: { [self] in await ownReport() }
        )
        let outcome = await run(runner)
        let refusedByAFullView = link.outbound && outcome.peerError?.code == .busy
        await view.ended(peerID, session: token.value, counted: token.inView, refused: refusedByAFullView)
        if outcome.peerError?.code == .away, let peer = outcome.peer { await rejoinIfTold(by: peer) }
        if outcome.peer != nil, token.value == nil {
            // A second connection to a peer we were already connected to: closed on purpose.
            return outcome
        }
        let failure = outcome.peer?.role == .oneShot && outcome.reachedUpToDate ? nil : outcome.failure
        let kept = await registry.ended(
            node: outcome.peer == nil ? nil : peerID,
            token: token.value,
            address: address,
            error: failure
        )
        log.ended(outcome, failure: failure, kept: kept, registered: token.value != nil)
        return outcome
    }

    /// What a session with `peer` starts from: this node's identity, role and statements, and
    /// the writer it writes under now (it changes while the node runs after a witnessed rollback,
    /// and each session announces the current one).
    private func sessionConfig(for peer: NodeID, outsideView: Bool) async -> SessionMachine.SessionConfig {
        let store = self.store
        let writer = (try? await io.run { try store.info().writerID }) ?? info.writerID
        hub.setWriter(writer)
        var config = SessionMachine.SessionConfig(
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            role: options.role,
            name: info.nodeName,
            authenticatedPeer: peer,
            writer: writer
        )
        config.antiEntropyInterval = options.antiEntropyInterval
        if let graftDelay = options.graftDelay { config.graftDelay = graftDelay }
        if let graftAhead = options.graftAhead { config.graftAhead = graftAhead }
        config.clock = WallClock.milliseconds
        config.viewSessions = UInt64(await view.activeCount)
        config.outsideView = outsideView
        if options.role != .oneShot {
            config.listenPort = UInt64(listenPort.withLockedValue { $0 })
            // A revoked member's address is not passed on: whoever dialled it would be refused.
            config.addresses = await registry.gossip(except: peer).filter {
                statements.revocation(of: $0.nodeID) == nil
            }
        }
        config.statements = statements.records
        config.maxWriters = options.writerBounds.total
        if let (rejoined, away, stale) = try? await io.run({
            let now = WallClock.milliseconds
            let rejoined = try store.rejoinedAt()
            let stale = try store.hasRejoinPending() ? rejoined : try store.staleSince(now: now)
            return (rejoined, try store.hasRejoinPending() ? rejoined : try store.awaySince(now: now) ?? stale, stale)
        }) {
            config.rejoinedAt = rejoined
            config.awaySince = away ?? 0
            config.staleSince = stale ?? 0
        }
        // A one-shot sync is no member's session: its hello carries no reports.
        if options.role != .oneShot {
            // Signed reports only (protocol 1.13): this node's own, then each member's latest.
            // An older peer reads none (`reports` stays empty): it believes reports passed on
            // without a signature, which no member should be able to send in another's name.
            let me = info.nodeID
            let held =
                (try? await io.run { try store.memberReports() })?.lazy.filter {
                    $0.forgottenAt == nil && $0.nodeID != me
                }
                .compactMap { $0.signed.flatMap(Hello.SignedReport.init(encoded:)) } ?? []
            config.signedReports = ((await ownReport()).map { [$0] } ?? []) + held.prefix(WireLimits.maxReports - 1)
            config.members = await view.sketch
        }
        return config
    }

    /// A session's peer is claimed: unless a rejoin emptied the replica since this session said
    /// hello, notes the peer's clock and logs the start. A rejoin closes the sessions it finds;
    /// one claimed after that is refused here: the peer would send a stream computed from the
    /// vector the replica held before, and its completion would claim what the snapshot never
    /// brought. A session claimed before the rejoin whose batch lands between the rejoin's commit
    /// and `reopenAll` is refused by the store itself: every batch and stream end is checked,
    /// in its transaction, against when the replica had rejoined as the session said hello
    /// (``StoreError/rejoinedSince(session:replica:)``).
    private func began(with hello: Hello, log: SessionLog, epoch: Int) async -> ProtocolError? {
        guard rejoins.withLockedValue({ $0 }) == epoch else {
            return ProtocolError(
                .busy,
                "this node rejoined from a snapshot while the session began; it will connect again"
            )
        }
        if hello.clock > 0 {
            await registry.noteClock(
                hello.nodeID,
                offset: Int64(clamping: hello.clock) &- Int64(clamping: WallClock.milliseconds)
            )
        }
        log.began(with: hello)
        return nil
    }

    /// How a session reports to the node: its hello (statements learnt, the registry's claim),
    /// up-to-date points, batches applied (the relay settles conflicts) and progress.
    private func observer(
        of link: SessionLink,
        log: SessionLog,
        token: TokenBox,
        source: PeerSource,
        epoch: Int,
        outsideView: Bool,
        told: [[UInt8]]
    ) -> SessionObserver {
        let (registry, peerID) = (self.registry, link.peerID)
        var observer = SessionObserver()
        observer.peerReady = { [self] hello in
            guard await takeStatements(of: hello) else {
                link.close()
                return nil
            }
            if let refusal = unsignedPeerRefusal(hello) { return refusal }
            if let refusal = await judgeAway(hello) { return refusal }
            if let refusal = await rejoinIfStale(hello) { return refusal }
            await learn(from: hello)
            let (counted, refusal) = await viewAdmission(hello, outbound: link.outbound, outsideView: outsideView)
            if let refusal { return refusal }
            let claimed = await registry.claim(
                peer: hello,
                address: log.address,
                source: source,
                outbound: link.outbound,
                close: link.close
            )
            guard let claimed else {
                link.close()
                return nil
            }
            token.set(claimed)
            if source == .relay { relays.withLockedValue { $0?.claimed(hello.nodeID) } }
            if counted { await enterView(hello, outbound: link.outbound, token: token) }
            let verdict = await began(with: hello, log: log, epoch: epoch)
            if verdict == nil { await reopenIfStatementsMissed(told: told, hello) }
            return verdict
        }
        observer.upToDate = { [self] vv in
            await registry.upToDate(peerID, peerVersionVector: vv, at: WallClock.milliseconds)
            await reissueAfterRejoin(peerHolds: vv)
            if source == .relay { relayAnswered() }
            // A round outside the views ends here.
            if outsideView { link.close() }
        }
        observer.applied = { [self] changed in
            log.applied(changed)
            await settleAfterBatch()
        }
        observer.reported = { [self] report in await learnOwnReport(report, of: peerID) }
        observer.progress = { [self] progress in
            lastTraffic.withLockedValue { $0 = .now }
            log.moved(progress.counters)
            await registry.progress(peerID, progress)
        }
        return observer
    }

    /// Takes in the statements `hello` carries; false if its sender is revoked (the session
    /// then closes).
    private func takeStatements(of hello: Hello) async -> Bool {
        await statementsLearned(await statements.learn(hello.statements))
        return statements.revocation(of: hello.nodeID) == nil
    }

    /// What a member's hello teaches beyond its statements: its reports, folds and gossip.
    private func learn(from hello: Hello) async {
        await learnReports(from: hello)
        await adoptFolds(from: hello)
        if hello.role != .oneShot, options.followGossip { await gossiped.learn(hello, me: info.nodeID, view: view) }
    }

    /// A statement learned after this session's hello was made and before the session was
    /// registered met no session to reopen (``PeerRegistry/reopenAll()``): if the peer lacks
    /// one, this session, begun and registered, is closed as `reopenAll` closes the others, and
    /// the next one's hello carries it (issue 62). A one-shot sync is no session of the registry's.
    private func reopenIfStatementsMissed(told: [[UInt8]], _ hello: Hello) async {
        guard hello.role != .oneShot, statements.lacks(told: told, peerHolds: hello.statements) else { return }
        await registry.reopen(hello.nodeID)
    }

    /// Whether a member's session counts in the view (``ViewKeeper``), and for one that dialled
    /// this node, a full view's refusal. A round outside the views, the relay's sessions and a
    /// one-shot sync's do not count.
    private func viewAdmission(_ hello: Hello, outbound: Bool, outsideView: Bool) async -> (Bool, ProtocolError?) {
        let counted = options.role == .peer && hello.role == .peer && !hello.outsideView && !outsideView
        guard counted, !outbound, await !view.accepts(hello.nodeID, alone: hello.viewSessions == 0) else {
            return (counted, nil)
        }
        let held = await view.activeCount
        return (
            counted,
            ProtocolError(
                .busy,
                "this node keeps sessions with \(held) members already (its view is full); dial another"
            )
        )
    }

    /// A counted session is open: its peer is in the active view until it ends. A member let in
    /// because it was alone may fill a full view past its bound: another session goes at once.
    private func enterView(_ hello: Hello, outbound: Bool, token: TokenBox) async {
        await view.opened(hello.nodeID, dialled: outbound, alone: hello.viewSessions == 0, session: token.value)
        token.countInView()
        for displaced in await view.excess() { await registry.closeForView(displaced) }
    }

    /// Answers a connection with `error` instead of a session, and closes it. The peer's hello is
    /// read first (for at most 5 s), so that the answer is not lost in a race with its first write.
    private func answerWithoutSession(_ connection: PeerConnection, _ error: ProtocolError) async {
        try? await connection.channel.executeThenClose { inbound, outbound in
            await withTaskGroup(of: Void.self) { race in
                race.addTask {
                    var messages = inbound.makeAsyncIterator()
                    _ = try? await messages.next()
                }
                race.addTask { try? await Task.sleep(for: .seconds(5)) }
                await race.next()
                race.cancelAll()
            }
            try await outbound.write(.error(error))
        }
    }

    /// Tells a revoked peer so, in words, and closes its connection without a session.
    private func refuseRevoked(
        _ connection: PeerConnection,
        _ revocation: Revocation,
        address: String
    ) async
        -> SessionOutcome
    {
        let when = WallClock.iso8601(milliseconds: revocation.at)
        let error = ProtocolError(
            .revoked,
            "this node (\(revocation.node.short)) was revoked by the cluster's authority at \(when)\(revocation.reason.isEmpty ? "" : ": \(revocation.reason)")"
        )
        await answerWithoutSession(connection, error)
        let text =
            "revoked: \(revocation.name) was revoked at \(when)\(revocation.reason.isEmpty ? "" : ": \(revocation.reason)")"
        await registry.refuse(revocation.node, error: text)
        noteRefused(TransportError(text, refusal: .revoked), address: address, dialled: connection.outbound)
        return SessionOutcome(error: error)
    }

    /// Acts on cluster statements new to this node: logs each revocation and closes the revoked
    /// peer's session, overrules the revoked nodes' writes it holds beyond their cuts, applies a
    /// new admitter set, then reopens every other session so that their hellos carry the news on.
    func statementsLearned(_ news: ClusterStatements.News) async {
        guard !news.isEmpty else { return }
        if let admitters = news.admitters { await admittersChanged(admitters) }
        let overruled = await statements.overruleRevokedWrites(news: news)
        if overruled > 0 {
            await announceChange()
            logger.notice(
                "overruled \(overruled) writes of revoked nodes or readers made after their cut (they show in history and status)"
            )
        }
        for revocation in news.revocations {
            let when = WallClock.iso8601(milliseconds: revocation.at)
            let itself = revocation.node == info.nodeID ? "; that is this node: members will refuse it" : ""
            logger.notice(
                "node \(revocation.node.short) (\(revocation.name)) was revoked at \(when) by \(revocation.by.short)\(revocation.reason.isEmpty ? "" : ": \(revocation.reason)")\(itself)"
            )
            await registry.refuse(revocation.node, error: "revoked at \(when)")
            // A revoked member holds nothing back any more (its sessions are refused, so no report
            // of its own brings it back).
            let store = self.store
            _ = try? await io.write {
                try store.forgetMember(revocation.node, at: WallClock.milliseconds, dropPeer: false)
            }
        }
        for role in news.roles {
            let itself =
                role.node != info.nodeID
                ? ""
                : role.role == .reader
                    ? "; that is this node: it refuses local edits from now on" : "; that is this node"
            logger.notice(
                "node \(role.node.short) (\(TerminalText.escaped(role.name))) is \(role.role.withArticle) since \(WallClock.iso8601(milliseconds: role.at)) (made so by \(role.by.short))\(itself)"
            )
        }
        if let settings = news.settings {
            logger.notice(
                "cluster settings of \(WallClock.iso8601(milliseconds: settings.at)): deleted items restorable for \(settings.trashWindow / 1000) s, members away after \(settings.awayAfter / 1000) s of silence"
            )
        }
        if news.signedWrites, let rule = statements.signedWrites {
            logger.notice(
                "signed writes \(rule.required ? "required" : "no longer required") since \(WallClock.iso8601(milliseconds: rule.at)) (set by \(rule.by.short))\(rule.required ? ": a write without its member's signature is refused, and a peer before protocol 1.14 cannot sync" : "")"
            )
        }
        // Admissions alone are not urgent: they travel with the next sessions.
        guard
            !news.revocations.isEmpty || news.admitters != nil || news.cutsChanged || news.settings != nil
                || !news.roles.isEmpty || news.signedWrites
        else {
            return
        }
        await registry.reopenAll()
    }

    /// Signs, once, this replica's own writes made before it could sign (by a lansync before
    /// protocol 1.14): where the cluster requires signed writes, those the authority had not
    /// seen when it required them would be refused (Docs/SECURITY.md, "Requiring signed writes").
    private func signHeldOwnWrites() async {
        let store = self.store
        do {
            let signed = try await io.write { try store.signHeldOwnWrites() }
            if signed > 0 {
                logger.notice("signed \(signed) field version(s) this replica wrote before it could sign its writes")
            }
        } catch {
            logger.error("could not sign the writes this replica made before it could sign: \(error)")
        }
    }

    /// Refuses a peer before protocol 1.14 where signed writes are required: it cannot sign its
    /// writes (each would be refused) nor pass on others' signatures, so it is told to upgrade.
    func unsignedPeerRefusal(_ hello: Hello) -> ProtocolError? {
        guard hello.version < .signedWrites, let rule = statements.signedWrites, rule.required else { return nil }
        logger.notice(
            "refused \(TerminalText.escaped(hello.name)) (\(hello.nodeID.short)), of protocol \(hello.version): this cluster requires signed writes, which it cannot make; upgrade lansync on it"
        )
        return ProtocolError(
            .protocolVersion,
            "this cluster requires signed writes since \(WallClock.iso8601(milliseconds: rule.at)) (set by \(rule.by.short)): upgrade lansync on this machine to one of protocol \(ProtocolVersion.signedWrites) or later"
        )
    }

    /// A set of admitting machines: if this machine is not in it and still holds the authority's
    /// key, the key leaves its data directory, and its node admits no one from now on.
    func admittersChanged(_ set: AdmitterSet) async {
        guard !set.nodes.contains(info.nodeID), joinDesk.isAdmitting else { return }
        joinDesk.retire()
        do {
            try options.retireAuthority?()
            logger.notice(
                "the cluster's authority key was removed from this machine: since \(WallClock.iso8601(milliseconds: set.at)), only \(set.nodes.map(\.short).joined(separator: ", ")) admit others"
            )
        } catch {
            logger.error(
                "this machine may no longer admit others, but its authority key could not be removed: \(error)"
            )
        }
    }

    /// Records where the local API listens, for `status`.
    public func announceAPI(_ address: String?) { apiAddress.withLockedValue { $0 = address } }

    /// On a relay, after a batch: settles what it brought, one round before the batch is
    /// acknowledged (what came while it ran is settled in a task of its own, so the session waits
    /// on its own batch only). A relay that shares the authority asks the database, so it settles
    /// in a task of its own: the session never waits on it.
    func settleAfterBatch() async {
        guard let authority else { return }
        if authority.gate != nil {
            settleSoon()
            return
        }
        let (settled, more) = await authority.settleOnce()
        if settled > 0 { await announceChange() }
        if more { settleSoon() }
    }

    /// Settles the replica's open conflicts in a task of its own, and tells the sessions of
    /// any settlement (calls while one runs make it look once more: ``Authority/settleAll()``).
    func settleSoon() {
        guard let authority else { return }
        Task {
            if await authority.settleAll() > 0 { await self.announceChange() }
        }
    }

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

    /// Tells every session the replica changed (a local edit, a settlement), at once; then reads
    /// the version vector for the hub. The sessions read the replica themselves
    /// for this change, so the edit goes out without waiting for that read (0.2 ms of W5's path).
    func announceChange() async {
        hub.notifyUnread()
        await learnVersion()
    }

    /// Reads the version vector for the hub after a change announced unread.
    func learnVersion() async {
        let store = self.store
        if let version = try? await io.run({ try store.versionVector() }) { hub.learn(version: version) }
    }

    /// Every anti-entropy interval, wakes the sessions whose peer is not known to hold all this
    /// replica holds (they send what it lacks); an idle node wakes none.
    private func antiEntropy() async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: options.antiEntropyInterval)
            hub.wakeLagging()
        }
    }

    /// Notices replica changes nobody announced (an edit while the control socket was down). It
    /// looks at the store's quick change mark first (for a SQLite file, two `stat` calls): only
    /// when it moved does it read the version vector, so an idle node costs next to nothing.
    ///
    /// A read that fails for want of the storage (``LansyncStore/StoreError/io(_:)``) is tried
    /// again at the next interval, and the node goes on: a replica in PostgreSQL is out of reach
    /// while its server restarts, and the sessions and the relay's other work come back by
    /// themselves once it answers. Any other failure (a damaged file) stops the node, as before.
    private func pollForChanges() async throws {
        let store = self.store
        var last = try await io.run { try store.versionVector() }
        var lastMark = store.quickChangeMark()
        var failing = false
        while !Task.isCancelled {
            try await Task.sleep(for: options.pollInterval)
            let mark = store.quickChangeMark()
            guard mark != lastMark else { continue }
            let now: VersionVector
            do {
                now = try await io.run { try store.versionVector() }
            } catch StoreError.io(let problem) {
                // Out of reach (a server restarting, a lost connection): said once, tried again.
                if !failing {
                    logger.warning(
                        "could not read the replica's version vector (trying again every \(options.pollInterval)): \(problem)"
                    )
                }
                failing = true
                continue
            }
            if failing { logger.notice("the replica answers again") }
            failing = false
            lastMark = mark
            if now != last {
                last = now
                hub.notify(version: now)
            }
        }
    }

    /// Acts on what another process committed to a replica it shares with this one (relay
    /// processes on one replica in PostgreSQL), as the store hears of it: its sessions are told of
    /// a change, and the relay settles what the change brought (a conflict that another process's
    /// batch completed is this one's to settle when it holds the lease); a statement (a
    /// revocation) is taken in as one a peer brought.
    private func followCommitsElsewhere() async {
        guard let commits = store.commitsElsewhere() else { return }
        for await commit in commits {
            switch commit {
            case .replica:
                await announceChange()
                settleSoon()
            case .statements: await statementsLearned(await statements.reload())
            }
        }
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
