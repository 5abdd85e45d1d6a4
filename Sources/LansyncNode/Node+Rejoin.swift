import LansyncCore
import LansyncReplica
import LansyncWire
import Logging
import NIOConcurrencyHelpers

// Coming back after being away (Docs/MERGE.md, "Coming back after being away"): a member silent
// for longer than the cluster's away window may have been collected without, so its old state is
// not merged. The peer that sees it come back refuses its state (`away`); the member, told so,
// keeps aside the writes only it holds, empties its replica, takes the peer's snapshot like a new
// member, then re-issues those writes under a new writer.
extension Node {
    /// Refuses the state of a member that is away or forgotten here and has not rejoined since it
    /// was last heard of: it must rejoin first, even when it brings nothing new (what it holds
    /// may be what the others collected since, and what it collected may be what they restored).
    /// Nil to go on. A replica that is stale or rejoining refuses no one: it is the one out of
    /// date. One that is away itself judges by the relay's last word rather than its own clock:
    /// it refuses only a peer that was already away when it last heard of the relay (what it took
    /// from the relay's side since may lack the tombstones of items purged meanwhile, which that
    /// peer could bring back to life).
    ///
    /// Two members that each count the other as away were apart, each with other members, for
    /// longer than the window (a cluster split in two halves), and each half may have collected
    /// what the other still writes to: no choice between two members is safe, only one between
    /// halves. The relay's half wins: the relay refuses the other (which rejoins from it), a
    /// member takes the relay's refusal (and rejoins), and two members that are not the relay
    /// refuse each other without either rejoining; each rejoins when it meets the relay's side.
    func judgeAway(_ hello: Hello) async -> ProtocolError? {
        guard let since = await countsAsAway(hello) else { return nil }
        let store = self.store
        let settings = (try? await io.run { try store.collectionSettings() }) ?? .standard
        let when = WallClock.iso8601(milliseconds: since)
        if await isCountedAsAway(by: hello, settings: settings) {
            if hello.role == .relay { return nil }
            if options.role != .relay {
                logger.warning(
                    "\(hello.name) (\(hello.nodeID.short)) and this node each count the other as away (this node last heard of it at \(when)): the cluster was split for longer than the away window, and neither takes the other's state; each rejoins from a snapshot when it meets the relay's side"
                )
                return ProtocolError(
                    .away,
                    "this node and yours each count the other as away: the cluster was split for longer than the away window (\(Duration.milliseconds(settings.awayAfter))); neither takes the other's state, and each rejoins from a snapshot when it meets the relay's side"
                )
            }
        }
        logger.notice(
            "\(hello.name) (\(hello.nodeID.short)) comes back after being away since \(when): its state is refused until it rejoins from a snapshot"
        )
        return ProtocolError(
            .away,
            "this node was last heard of at \(when), longer ago than the cluster's away window (\(Duration.milliseconds(settings.awayAfter))): what it holds may have been collected meanwhile, so it must rejoin from a snapshot (a running `lansync node` does so on its own; `lansync sync` cannot)"
        )
    }

    /// When `hello`'s node was last heard of, if this replica counts it as away (or forgotten),
    /// is neither stale nor rejoining itself, and the peer has not rejoined since: it would be
    /// refused. A replica away itself counts as away only a peer that was away already when it
    /// last heard of the relay (or rejoined).
    func countsAsAway(_ hello: Hello) async -> UInt64? {
        let store = self.store
        let now = WallClock.milliseconds
        guard
            let (since, stale, pending) = try? await io.run({
                (
                    try store.memberAwaySince(hello.nodeID, now: store.awaySince(now: now) ?? now),
                    try store.staleSince(now: now), try store.hasRejoinPending()
                )
            }),
            let since, stale == nil, !pending, hello.rejoinedAt <= since
        else { return nil }
        return since
    }

    /// Whether the peer counts this node as away and would refuse it: its hello's report of this
    /// node is older than the window, it is not away itself, and this node has not rejoined since.
    func isCountedAsAway(by hello: Hello, settings: CollectionSettings) async -> Bool {
        let store = self.store
        let rejoined = (try? await io.run { try store.rejoinedAt() }) ?? 0
        let now = WallClock.milliseconds
        // The peer passes back the latest report this node signed that it holds (protocol
        // 1.13): a report in this node's name without its signature says nothing.
        return hello.awaySince == 0
            && (hello.signedReports.filter { $0.nodeID == info.nodeID && $0.isSigned(in: info.clusterID) }
                .max { $0.at < $1.at }
                .map { $0.at &+ settings.awayAfter < now && rejoined <= $0.at } ?? false)
    }

    /// If this replica's own state is older than the away window (``ReplicaStorage/staleSince(now:)``:
    /// a copy put back), what it holds may be what the others purged: it merges with no one, and
    /// rejoins from the relay once it meets it current (its hello says it is neither away nor
    /// stale), or, without a relay, from the first peer that is current. The relay itself
    /// rejoins from the first member that is current too: not a copy put back or rejoining
    /// (``Hello/staleSince``, protocol 1.12), whose state may lack what the relay purged since
    /// its own copy was taken, and not away itself, whose state may lack what the relay's side
    /// collected without it (issue 63: before, a stale relay rejoined from the first member it
    /// met, and a delete it had purged came back from another copy put back). When no such
    /// member comes (every member that is no copy stopped hearing of the relay meanwhile), an
    /// operator names one (`lansync backup accept --from NAME`).
    /// Two copies put back and no current member left wait for each other for good: an
    /// operator says which copy is current (`lansync backup accept`, Docs/MERGE.md, "Stale or
    /// away"). Returns the refusal of this session (`busy`), nil to go on.
    func rejoinIfStale(_ hello: Hello) async -> ProtocolError? {
        guard options.role != .oneShot, hello.role != .oneShot else { return nil }
        let store = self.store
        let now = WallClock.milliseconds
        guard
            let (stale, pending, relay, named) = try? await io.run({
                (
                    try store.staleSince(now: now), try store.hasRejoinPending(), try store.relayID(),
                    try store.acceptedRejoinSource()
                )
            }),
            let stale, !pending
        else { return nil }
        // `awaySince` is nonzero for a peer away itself, stale or rejoining; `staleSince` (1.12)
        // says which, for the words.
        // An operator may name a member that is away itself (`lansync backup accept --from`),
        // never one that is a copy put back or rejoining.
        let isNamed = named == hello.nodeID && hello.version >= ProtocolVersion.staleness && hello.staleSince == 0
        let source =
            (hello.awaySince == 0 || isNamed)
            && (options.role == .relay || relay == nil || hello.role == .relay || relay == hello.nodeID)
        let when = WallClock.iso8601(milliseconds: stale)
        guard source || options.role != .relay else {
            let what =
                hello.staleSince != 0
                ? "is a copy put back too (or rejoining)"
                : hello.version < ProtocolVersion.staleness
                    ? "is away itself or a copy put back (its version cannot say which)"
                    : "is away itself (it has not heard of the relay for the away window), so it may lack what the relay's side collected without it"
            logger.notice(
                "this relay's replica was last up to date at \(when) and has been put back from a copy since; \(hello.name) (\(hello.nodeID.short)) \(what): the relay waits to rejoin from a current member, and merges with no one meanwhile"
            )
            return ProtocolError(
                .busy,
                "this relay was put back from a copy older than the away window and waits to rejoin from a current member; yours \(what), so neither takes the other's state"
            )
        }
        guard source else {
            logger.notice(
                "this replica was last up to date at \(when) and has been put back from a copy since: it merges with no one until it rejoins from a snapshot of \(relay == nil ? "a current peer" : "the relay")"
            )
            return ProtocolError(
                .busy,
                "this node's replica was put back from a copy older than the away window: it waits to rejoin from a snapshot of \(relay == nil ? "a current peer" : "the relay")"
            )
        }
        logger.notice(
            "this replica was last up to date at \(when) and has been put back from a copy since: older than the cluster's away window, so it rejoins from a snapshot of \(hello.name) instead of merging"
        )
        await rejoin(from: hello, told: false)
        return ProtocolError(
            .busy,
            "this node is rejoining from a snapshot (its replica was put back from an old copy); it will connect again"
        )
    }

    /// Told `away` by `peer`: rejoins from it if it is the relay (whose state holds whatever the
    /// cluster collected without this node), or, in a cluster without a relay, unless this node
    /// counts the peer as away too (the halves of a split cluster refuse each other). Another
    /// member's refusal only ends the session: a snapshot of a member may lack deletes the
    /// relay's side collected and purged, and the writes made on it would come back as late
    /// concurrent writes.
    func rejoinIfTold(by peer: Hello) async {
        let store = self.store
        let relay = try? await io.run { try store.relayID() }
        if peer.role != .relay, relay != nil, relay != peer.nodeID {
            logger.notice(
                "\(peer.name) counts this node as away; it rejoins from a snapshot when it meets the relay"
            )
            return
        }
        if peer.role != .relay, await countsAsAway(peer) != nil { return }
        await rejoin(from: peer, told: true)
    }

    /// Keeps aside the writes only this replica holds (as against `peer`'s vector), empties the
    /// replica and starts a new writer, then reopens every session: the next complete stream is
    /// the snapshot. At most one rejoin at a time, and none while writes kept aside still wait.
    func rejoin(from peer: Hello, told: Bool) async {
        guard options.role != .oneShot,
            rejoining.withLockedValue({ busy in
                defer { busy = true }
                return !busy
            })
        else { return }
        defer { rejoining.withLockedValue { $0 = false } }
        let store = self.store
        let now = WallClock.milliseconds
        do {
            if try await io.run({ try store.hasRejoinPending() && store.rejoinedAt() &+ 60_000 > now }) { return }
            // The peer's view of who is away becomes this node's: a member of this node's old
            // half that the peer counts as away must rejoin too before its state is taken.
            let signed = peer.signedReports.filter {
                $0.at <= now &+ Hello.SignedReport.maxAhead && $0.isSigned(in: info.clusterID)
            }
            let own = signed.first { $0.nodeID == peer.nodeID }
            let reports =
                [
                    MemberReport(
                        nodeID: peer.nodeID,
                        seen: peer.versionVector,
                        at: now,
                        signed: own?.encoded,
                        signedAt: own?.at ?? 0
                    )
                ]
                + signed.filter { $0.nodeID != peer.nodeID }.map { $0.recorded(now: now) }
            let start = try await io.write {
                try store.rejoin(keepingUnseenBy: peer.versionVector, adopting: reports, now: now)
            }
            // At once: no session may be handed a delta read before the replica was emptied.
            hub.reset(version: nil)
            let why =
                told
                ? "\(peer.name) counts this node as away (silent for longer than the cluster's away window) or forgot it"
                : "this replica is older than the cluster's away window"
            logger.notice(
                "\(why): rejoining from a snapshot of \(peer.name); \(start.fields) field(s) of \(start.items) item(s) with writes no other member holds are kept aside, to be re-issued once the snapshot is in"
            )
            rejoins.withLockedValue { $0 += 1 }
            hub.reset(version: try? await io.run { try store.versionVector() })
            await registry.reopenAll()
            hub.reset(version: try? await io.run { try store.versionVector() })
        } catch {
            logger.error("could not rejoin from a snapshot (the next session tries again): \(error)")
        }
    }

    /// Once this replica holds everything a peer holds (`peerHolds`, at an up-to-date point:
    /// the snapshot is in) after a rejoin, re-issues what was kept aside and says what came of it
    /// in one line. A session that began before the rejoin and ends up to date now proves
    /// nothing: the replica does not hold what that peer holds.
    func reissueAfterRejoin(peerHolds: VersionVector) async {
        let store = self.store
        guard
            (try? await io.run({ try store.hasRejoinPending() && store.versionVector().covers(peerHolds) })) == true
        else { return }
        do {
            guard let outcome = try await io.write({ try store.reissueRejoinPending(now: WallClock.milliseconds) })
            else { return }
            let dropped =
                outcome.dropped == 0
                ? "" : "; dropped the edits to \(outcome.dropped) item(s) deleted while it was away"
            logger.notice(
                "rejoined from a snapshot: re-issued \(outcome.writes) offline write(s) to \(outcome.items) item(s) under a new writer\(dropped)"
            )
            await announceChange()
        } catch {
            logger.error("could not re-issue the writes kept aside at rejoin (the next session tries again): \(error)")
        }
    }
}
