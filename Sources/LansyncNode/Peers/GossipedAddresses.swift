import LansyncCore
import LansyncDiscovery
import LansyncReplica
import LansyncTransport
import LansyncWire
import NIOConcurrencyHelpers

/// Where other members say they last reached a member (``Hello/addresses``, protocol 1.8): a
/// node dials the ones it is not connected to, so one that multicast cannot reach (another
/// subnet, a VPN) finds its peers after meeting any one member (Docs/DISCOVERY.md, "Where
/// multicast cannot reach").
///
/// An address is a hint: TLS decides who answers, and a dial loop for a passed-on address ends at
/// its first failure (it comes back when a member passes it on again), forgetting it. At most
/// ``WireLimits/maxAddresses`` such loops run at once, one per node: a member passing on made-up
/// addresses costs this node a bounded number of failed dials per session it opens, and nothing
/// it keeps.
final class GossipedAddresses: Sendable {
    /// The addresses passed on, by the node they name, and which have a dial loop.
    let peers = DiscoveredPeers()
    let stream: AsyncStream<NodeID>
    private let continuation: AsyncStream<NodeID>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(WireLimits.maxAddresses))
    }

    /// Takes what `hello` passes on (never this node's own address), and asks for a dial loop for
    /// each node new to it.
    /// Each is also offered to `view` (its passive view, bounded, keeps what it takes).
    func learn(_ hello: Hello, me: NodeID, view: ViewKeeper) async {
        for passed in hello.addresses where passed.nodeID != me && passed.nodeID != hello.nodeID {
            // A link-local address names an interface of the sender's machine: no use here.
            guard let address = PeerAddress(parsing: passed.address), !AddressPreference.isLinkLocal(address.host)
            else { continue }
            await view.learn(passed.nodeID, at: [address], source: .gossip)
            guard await peers.dialingCount < WireLimits.maxAddresses else { break }
            if await peers.found(passed.nodeID, at: [address]) == .new { continuation.yield(passed.nodeID) }
        }
    }

    func finish() { continuation.finish() }
}

extension Node {
    /// Once the cluster is past a full mesh: every 2 s, closes sessions past the view's bound and
    /// dials the members the view chooses to fill it, and every ``outsideViewRounds`` anti-entropy
    /// intervals opens a round with one member outside it.
    func keepTheView(transport: Transport) async {
        let every = options.antiEntropyInterval * Self.outsideViewRounds
        var nextRound = ContinuousClock.now + every
        await withDiscardingTaskGroup { dialers in
            while !Task.isCancelled {
                for node in await view.excess() { await registry.closeForView(node) }
                for (node, at, source) in await view.fill() {
                    dialers.addTask {
                        await self.keepConnected(.chosen(node, at, source: source), transport: transport)
                    }
                }
                if ContinuousClock.now >= nextRound {
                    nextRound = .now + every
                    if let (node, at, source) = await view.antiEntropyPartner() {
                        dialers.addTask {
                            await self.keepConnected(.antiEntropy(node, at, source: source), transport: transport)
                        }
                    }
                }
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    /// How many anti-entropy intervals apart a node opens a round outside its view (4: every
    /// minute by default). Such a round is a TLS session of its own, and pruned sessions already
    /// repair what the tree misses; the round is for what a partition or a lost view left
    /// behind. Every 15 s it cost a node of 200 more idle CPU than its whole view (W9: 2.26 ms/s
    /// against 1.45 with the rounds a minute apart).
    static let outsideViewRounds = 4

    /// Dials every member another member passed on an address for, each in its own loop.
    func followGossip(transport: Transport) async {
        await withDiscardingTaskGroup { dialers in
            for await node in gossiped.stream {
                dialers.addTask { await self.keepConnected(.gossiped(node, self.gossiped.peers), transport: transport) }
            }
        }
    }
}
