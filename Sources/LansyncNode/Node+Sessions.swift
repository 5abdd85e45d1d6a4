import CoreMetrics
import Foundation
import LansyncCore
import LansyncDiscovery
import LansyncIdentity
import LansyncJSON
import LansyncReplica
import LansyncTransport
import LansyncWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

// Sessions: admitting a connection as a session, configuring it, and recording what it did.
extension Node {
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

    func admittedSession(
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
    func sessionConfig(for peer: NodeID, outsideView: Bool) async -> SessionMachine.SessionConfig {
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

    /// How a session reports to the node: its hello (statements learnt, the registry's claim),
    /// up-to-date points, batches applied (the relay settles conflicts) and progress.
    func observer(
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
}
