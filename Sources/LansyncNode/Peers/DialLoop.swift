import LansyncCore
import LansyncReplica
import LansyncTransport
import Logging
import NIOConcurrencyHelpers

/// What a dial loop keeps connected: a configured address, a peer that discovery found, one a
/// member passed on, the relay (one of ``Node/relays``, ``RelayRoster``); or, once the cluster is past a full mesh, a member the view
/// chose (``ViewKeeper/fill()``) or one for a round of anti-entropy outside the view, each for
/// one session.
enum DialTarget: Sendable {
    case configured(PeerAddress)
    case discovered(NodeID, DiscoveredPeers)
    case gossiped(NodeID, DiscoveredPeers)
    case relay
    case chosen(NodeID, [PeerAddress], source: PeerSource)
    case antiEntropy(NodeID, [PeerAddress], source: PeerSource)

    var source: PeerSource {
        switch self {
        case .configured: .configured
        case .discovered: .mdns
        case .gossiped: .gossip
        case .relay: .relay
        case .chosen(_, _, let source), .antiEntropy(_, _, let source): source
        }
    }
}

extension Node {
    /// The one dial loop: dial the target, run the session, wait (backoff with jitter), again.
    ///
    /// - A configured or discovered peer that is connected already (it dialled us) is looked at
    ///   again 5 s later.
    /// - A discovered peer is given up once it is no longer advertised and a connection to it fails
    ///   (it is found again when it comes back); a passed-on address at its first failure, or
    ///   when the peer is connected some other way.
    /// - The relay is kept as a live session at all times, whatever direct sessions and view the
    ///   node has (issue 63): an edit reaches it as it reaches any connected peer, so a machine
    ///   that goes away right after an edit has left it on the relay. A session that ends is
    ///   dialled again at once (after the first, jittered backoff step). A relay that cannot be
    ///   reached, or whose session breaks before it is up to date, is left for the next one
    ///   given, at once; the loop backs off only once every relay has failed in a row.
    func keepConnected(_ target: DialTarget, transport: Transport) async {
        var backoff = Backoff()
        var rng = SystemRandomNumberGenerator()
        loop: while !Task.isCancelled {
            switch await hold(target) {
            case .stop: break loop
            case .wait:
                try? await Task.sleep(for: .seconds(5))
                continue
            case .dial: break
            }
            let candidates = await addresses(of: target)
            guard !candidates.isEmpty else { break }
            do {
                let connection = try await transport.connect(toFirstOf: candidates.map { ($0.host, $0.port) })
                let address = Self.answered(connection, among: candidates)
                if let node = target.node { await target.peers?.reached(node, at: address) }
                let began = ContinuousClock.now
                let outcome = await session(
                    connection,
                    address: address.description,
                    source: target.source,
                    outsideView: target.isAntiEntropy
                )
                // A relay session that ends soon after it was up to date, again and again (a relay
                // that closes it on purpose), must not be redialled four times a second.
                let lasted = ContinuousClock.now - began >= .seconds(10)
                if target.isOneSession {
                    if let node = target.node { await view.finishedDial(node) }
                    break
                }
                if outcome.reachedUpToDate, lasted || !target.isRelay { backoff.reset() }
                if outcome.isPermanent { backoff.giveUpForNow() }
                if target.isRelay {
                    let why = outcome.failure ?? "the relay closed the session"
                    if outcome.reachedUpToDate {
                        relays.withLockedValue {
                            $0?.lost(because: "its session ended: \(why)", at: WallClock.milliseconds)
                        }
                    } else if relayFailed(because: outcome.failure ?? "its session ended before it was up to date") {
                        continue
                    }
                }
            } catch {
                if await failedToConnect(target, candidates: candidates, error: error) { break }
                if target.isRelay, relayFailed(because: "cannot connect: \(error)") { continue }
            }
            try? await Task.sleep(for: backoff.next(using: &rng))
        }
        if case .discovered(let node, let seen) = target { await seen.stoppedDialing(node) }
        if case .gossiped(let node, let seen) = target { await seen.forget(node) }
    }

    /// The relay in use failed: moves to the next one given, says so, and whether to dial it at
    /// once (false once every relay has failed in a row: the loop backs off first).
    private func relayFailed(because reason: String) -> Bool {
        let (moved, roundFailed) =
            relays.withLockedValue { $0?.failed(because: reason, at: WallClock.milliseconds) } ?? (nil, true)
        if let moved {
            logger.warning("relay \(moved.from) failed (\(reason)); failing over to \(moved.to)")
        }
        return !roundFailed
    }

    /// A session with the relay reached up to date: the relay answers (``RelayRoster/answered()``).
    func relayAnswered() { relays.withLockedValue { $0?.answered() } }

    /// Whether the relay in use is connected now, whichever side dialled.
    func relayConnected() async -> Bool { await isConnected(.relay) }

    /// What a loop does instead of dialling now.
    private enum Hold { case dial, wait, stop }

    private func hold(_ target: DialTarget) async -> Hold {
        guard await viewAllows(target) else {
            // Past a full mesh the view dials whom it chooses; a passed-on address waits there.
            if case .gossiped = target { return .stop }
            return .wait
        }
        guard await isConnected(target) else { return .dial }
        // A member the view chose is in it already (it dialled us meanwhile).
        if case .chosen(let node, _, _) = target { await view.opened(node, dialled: true, alone: false) }
        // A passed-on address, or one session of the view's, is not needed while the peer is
        // connected some other way.
        if target.isOneSession { return .stop }
        if case .gossiped = target { return .stop }
        // Connected the other way: look again now and then (the peer redials too).
        return .wait
    }

    /// Records a failed dial; whether the loop ends (a discovered peer no longer advertised, a
    /// passed-on address, one session of the view's).
    private func failedToConnect(_ target: DialTarget, candidates: [PeerAddress], error: TransportError) async -> Bool {
        let address = candidates.map(\.description).joined(separator: ", ")
        var text = "cannot connect: \(error)"
        if error.refusal != nil {
            // A refused certificate speaks for itself ("wrong-cluster: ..."), and is logged.
            text = error.description
            noteRefused(error, address: address, dialled: true)
        }
        await registry.ended(node: target.node, token: nil, address: candidates[0].description, error: text)
        if let node = target.node, target.isOneSession {
            await view.failed(node)
            return true
        }
        if case .discovered(let node, let seen) = target, await !seen.isAdvertised(node) { return true }
        if case .gossiped(let node, let seen) = target {
            await seen.lost(node)
            return true
        }
        return false
    }

    private func isConnected(_ target: DialTarget) async -> Bool {
        switch target {
        case .configured(let peer):
            guard let known = await registry.node(at: peer.description) else { return false }
            return await registry.isConnected(known)
        case .discovered(let node, _), .gossiped(let node, _), .chosen(let node, _, _), .antiEntropy(let node, _, _):
            return await registry.isConnected(node)
        case .relay:
            // The relay in use may be connected some other way (it dialled us, or a member
            // passed its address on): no second session, and no failover for the refused one.
            if let node = relays.withLockedValue({ $0?.node }) { return await registry.isConnected(node) }
            let current = relays.withLockedValue { $0?.current.description }
            guard let current, let known = await registry.node(at: current) else { return false }
            return await registry.isConnected(known)
        }
    }

    /// Whether the view lets this loop dial now (``ViewKeeper``): the relay, and the view's own
    /// choices, always.
    private func viewAllows(_ target: DialTarget) async -> Bool {
        switch target {
        case .relay, .chosen, .antiEntropy: true
        case .configured: await view.mayDialConfigured()
        case .discovered(let node, _), .gossiped(let node, _): await view.mayDial(node)
        }
    }

    private func addresses(of target: DialTarget) async -> [PeerAddress] {
        switch target {
        case .configured(let peer): [peer]
        case .relay: relays.withLockedValue { $0.map { [$0.current] } ?? [] }
        case .discovered(let node, let seen), .gossiped(let node, let seen): await seen.addresses(of: node)
        case .chosen(_, let at, _), .antiEntropy(_, let at, _): at
        }
    }

    /// Which of `candidates` `connection` reached (its remote address, without a link-local
    /// scope, is one of theirs); the first when it cannot tell (a host name was dialled).
    static func answered(_ connection: PeerConnection, among candidates: [PeerAddress]) -> PeerAddress {
        guard candidates.count > 1, let ip = connection.remoteIP?.lowercased() else { return candidates[0] }
        return candidates.first { $0.host.lowercased().split(separator: "%").first.map(String.init) == ip }
            ?? candidates[0]
    }
}

extension DialTarget {
    var isRelay: Bool {
        if case .relay = self { return true }
        return false
    }

    /// A target of one session (the view's): its loop ends with the session, or the first failure.
    var isOneSession: Bool {
        switch self {
        case .chosen, .antiEntropy: true
        default: false
        }
    }

    var isAntiEntropy: Bool {
        if case .antiEntropy = self { return true }
        return false
    }

    /// Where a discovered or passed-on peer's addresses are kept.
    var peers: DiscoveredPeers? {
        switch self {
        case .discovered(_, let seen), .gossiped(_, let seen): seen
        case .configured, .relay, .chosen, .antiEntropy: nil
        }
    }

    /// The peer's node id when the target names one.
    var node: NodeID? {
        switch self {
        case .discovered(let node, _), .gossiped(let node, _), .chosen(let node, _, _), .antiEntropy(let node, _, _):
            node
        case .configured, .relay: nil
        }
    }
}
