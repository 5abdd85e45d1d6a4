import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import LansyncWire
import Testing

@testable import LansyncNode

/// How a node shows it knows a peer (`status`'s VIA, `source` in its JSON): by the strongest way,
/// so a peer given with `--peer` stays `static` when a member passes on its address and that
/// dial loop reaches it first, and an earlier run's record takes the `--peer` named now.
@Suite struct PeerSourceTests {
    let me = NodeID.node(1)
    let peer = NodeID.node(2)
    let cluster = NodeID.node(99)

    func registry(remembering records: [PeerRecord] = []) async throws -> PeerRegistry {
        let store = try SessionRunnerTests.store(makeTemporaryDirectory("peer-source"), "a", node: me, cluster: cluster)
        for record in records { try store.savePeer(record) }
        let registry = PeerRegistry(store: store, io: BlockingIO(threads: 1), localNode: me)
        await registry.load()
        return registry
    }

    func claim(
        _ registry: PeerRegistry,
        at address: String,
        _ source: PeerSource,
        outbound: Bool = true,
        listening port: UInt64 = 0
    ) async {
        var hello = Hello(nodeID: peer, clusterID: cluster, role: .peer, name: "b", versionVector: VersionVector())
        hello.listenPort = port
        _ = await registry.claim(peer: hello, address: address, source: source, outbound: outbound, close: {})
    }

    func source(_ registry: PeerRegistry) async -> PeerSource? {
        await registry.snapshot().first { $0.nodeID == peer }?.source
    }

    @Test func theStrongestWayWins() {
        #expect(PeerSource.gossip.strongest(.configured) == .configured)
        #expect(PeerSource.configured.strongest(.gossip) == .configured)
        #expect(PeerSource.inbound.strongest(.gossip) == .gossip)
        #expect(PeerSource.mdns.strongest(.configured) == .configured)
        #expect(PeerSource.relay.strongest(.mdns) == .relay)
        for source in PeerSource.allCases { #expect(source.strongest(source) == source) }
    }

    @Test func aConfiguredPeerReachedThroughGossipStaysStatic() async throws {
        let registry = try await registry()
        await registry.configure(address: "127.0.0.1:7430", source: .configured)
        // The gossip loop reaches it first, at the address a member passed on (the same one).
        await claim(registry, at: "127.0.0.1:7430", .gossip)
        #expect(await source(registry) == .configured)
        // Later sessions, by any loop, do not change how it is known.
        await claim(registry, at: "127.0.0.1:7430", .gossip)
        await claim(registry, at: "127.0.0.1:7430", .inbound, outbound: false)
        #expect(await source(registry) == .configured)
    }

    @Test func aConfiguredPeerReachedFirstStaysStaticWhenGossipDialsItLater() async throws {
        let registry = try await registry()
        await registry.configure(address: "127.0.0.1:7430", source: .configured)
        await claim(registry, at: "127.0.0.1:7430", .configured)
        await claim(registry, at: "127.0.0.1:7430", .gossip)
        #expect(await source(registry) == .configured)
        // mDNS seeing it advertised elsewhere does not move the address the user named.
        await registry.discovered(peer, addresses: ["10.0.0.2:7420"])
        #expect(await source(registry) == .configured)
        #expect(await registry.snapshot().first { $0.nodeID == peer }?.address == "127.0.0.1:7430")
    }

    /// The peer at a `--peer` address dialled in first (the README's tour: the kitchen's node
    /// starts before the garage's, its first dial is refused, and the garage dials in): it is
    /// that configured peer, with the address named, and no second entry is left holding the
    /// refused dial's error.
    @Test func aConfiguredPeerThatDialledInFirstIsTheOneNamed() async throws {
        let registry = try await registry()
        await registry.configure(address: "127.0.0.1:7430", source: .configured)
        await registry.ended(
            node: nil,
            token: nil,
            address: "127.0.0.1:7430",
            error: "cannot connect: connection refused"
        )
        await claim(registry, at: "127.0.0.1:51000", .inbound, outbound: false, listening: 7430)
        let entries = await registry.snapshot()
        #expect(entries.count == 1, "\(entries.map { ($0.address, $0.source, $0.lastError) })")
        #expect(entries.first?.source == .configured && entries.first?.address == "127.0.0.1:7430")
        #expect(await registry.node(at: "127.0.0.1:7430") == peer)
    }

    /// The strongest way is kept within a run, but which node is the relay is each run's own: a
    /// peer an earlier run dialled as its relay is not the relay of a run given no --relay (status
    /// and what counts as synced go by it), and is again when --relay names it.
    @Test func anEarlierRunsRelayIsTheRelayOnlyWhenNamedAgain() async throws {
        let old = PeerRecord(nodeID: peer, name: "r", address: "127.0.0.1:7500", source: .relay)
        let registry = try await registry(remembering: [old])
        #expect(await source(registry) == .configured)
        await claim(registry, at: "127.0.0.1:7500", .mdns)
        #expect(await source(registry) == .configured, "named by the user once: not made mDNS's")
        let again = try await self.registry(remembering: [old])
        await again.configure(address: "127.0.0.1:7500", source: .relay)
        #expect(await source(again) == .relay)
    }

    @Test func aPeerKnownOnlyByGossipOrInboundSaysSo() async throws {
        let registry = try await registry()
        await claim(registry, at: "127.0.0.1:50000", .inbound, outbound: false)
        #expect(await source(registry) == .inbound)
        await claim(registry, at: "127.0.0.1:7430", .gossip)
        #expect(await source(registry) == .gossip)
    }

    /// A record from an earlier run (here: a gossip dial reached it) at the address given with
    /// `--peer` now is that peer, and shows as configured.
    @Test func anEarlierRunsRecordTakesThePeerNamedNow() async throws {
        let registry = try await registry()
        await claim(registry, at: "127.0.0.1:7430", .gossip)
        #expect(await source(registry) == .gossip)
        await registry.configure(address: "127.0.0.1:7430", source: .configured)
        #expect(await source(registry) == .configured)
    }
}
