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

// Admission: what a peer's hello is checked against before its session counts (revocations, the
// view, the protocol a cluster requires), and what the cluster's statements it carries change.
extension Node {
    /// A session's peer is claimed: unless a rejoin emptied the replica since this session said
    /// hello, notes the peer's clock and logs the start. A rejoin closes the sessions it finds;
    /// one claimed after that is refused here: the peer would send a stream computed from the
    /// vector the replica held before, and its completion would claim what the snapshot never
    /// brought. A session claimed before the rejoin whose batch lands between the rejoin's commit
    /// and `reopenAll` is refused by the store itself: every batch and stream end is checked,
    /// in its transaction, against when the replica had rejoined as the session said hello
    /// (``StoreError/rejoinedSince(session:replica:)``).
    func began(with hello: Hello, log: SessionLog, epoch: Int) async -> ProtocolError? {
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

    /// Takes in the statements `hello` carries; false if its sender is revoked (the session
    /// then closes).
    func takeStatements(of hello: Hello) async -> Bool {
        await statementsLearned(await statements.learn(hello.statements))
        return statements.revocation(of: hello.nodeID) == nil
    }

    /// What a member's hello teaches beyond its statements: its reports, folds and gossip.
    func learn(from hello: Hello) async {
        await learnReports(from: hello)
        await adoptFolds(from: hello)
        if hello.role != .oneShot, options.followGossip { await gossiped.learn(hello, me: info.nodeID, view: view) }
    }

    /// A statement learned after this session's hello was made and before the session was
    /// registered met no session to reopen (``PeerRegistry/reopenAll()``): if the peer lacks
    /// one, this session, begun and registered, is closed as `reopenAll` closes the others, and
    /// the next one's hello carries it (issue 62). A one-shot sync is no session of the registry's.
    func reopenIfStatementsMissed(told: [[UInt8]], _ hello: Hello) async {
        guard hello.role != .oneShot, statements.lacks(told: told, peerHolds: hello.statements) else { return }
        await registry.reopen(hello.nodeID)
    }

    /// Whether a member's session counts in the view (``ViewKeeper``), and for one that dialled
    /// this node, a full view's refusal. A round outside the views, the relay's sessions and a
    /// one-shot sync's do not count.
    func viewAdmission(_ hello: Hello, outbound: Bool, outsideView: Bool) async -> (Bool, ProtocolError?) {
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
    func enterView(_ hello: Hello, outbound: Bool, token: TokenBox) async {
        await view.opened(hello.nodeID, dialled: outbound, alone: hello.viewSessions == 0, session: token.value)
        token.countInView()
        for displaced in await view.excess() { await registry.closeForView(displaced) }
    }

    /// Answers a connection with `error` instead of a session, and closes it. The peer's hello is
    /// read first (for at most 5 s), so that the answer is not lost in a race with its first write.
    func answerWithoutSession(_ connection: PeerConnection, _ error: ProtocolError) async {
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
    func refuseRevoked(
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
}
