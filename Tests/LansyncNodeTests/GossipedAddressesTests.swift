import LansyncCore
import LansyncTestSupport
import LansyncWire
import Testing

@testable import LansyncNode

/// What a node takes of the addresses a hello passes on (Docs/DISCOVERY.md, "Where multicast
/// cannot reach"): never its own or the sender's, never a malformed one, at most one dial loop per
/// node and ``WireLimits/maxAddresses`` in all, and nothing kept of a loop that ended.
@Suite struct GossipedAddressesTests {
    func hello(from sender: NodeID, passing addresses: [Hello.Address]) -> Hello {
        var hello = Hello(nodeID: sender, clusterID: .node(99), role: .peer, name: "s", versionVector: VersionVector())
        hello.addresses = addresses
        return hello
    }

    @Test func aBoundedNumberOfDialLoopsStartAndEndedOnesAreForgotten() async {
        let gossip = GossipedAddresses()
        let me = NodeID.node(1)
        let sender = NodeID.node(2)
        var passed = (0..<100).map { Hello.Address(nodeID: .node(1_000 + UInt64($0)), address: "10.0.0.9:7420", at: 1) }
        passed += [
            Hello.Address(nodeID: me, address: "10.0.0.1:7420", at: 1),
            Hello.Address(nodeID: sender, address: "10.0.0.2:7420", at: 1),
            Hello.Address(nodeID: .node(3), address: "not an address", at: 1),
        ]
        let view = ViewKeeper(me: me, limits: PeerView.Limits())
        await gossip.learn(hello(from: sender, passing: passed), me: me, view: view)
        #expect(await gossip.peers.dialingCount == WireLimits.maxAddresses)
        // The view keeps a bounded passive view of them, never this node.
        let kept = await view.current
        #expect(kept.passive.count == PeerView.Limits().passive && kept.passive[me] == nil)
        // The same addresses again start nothing more.
        await gossip.learn(hello(from: sender, passing: passed), me: me, view: view)
        #expect(await gossip.peers.dialingCount == WireLimits.maxAddresses)
        gossip.finish()
        var asked: [NodeID] = []
        for await node in gossip.stream { asked.append(node) }
        #expect(asked.count == WireLimits.maxAddresses && Set(asked).count == asked.count)
        #expect(!asked.contains(me) && !asked.contains(sender) && !asked.contains(.node(3)))
        for node in asked { await gossip.peers.forget(node) }
        #expect(await gossip.peers.dialingCount == 0)
        #expect(await gossip.peers.addresses(of: asked[0]).isEmpty)
    }
}

/// Where a discovered peer is dialled: every address it is advertised at, the one that answered
/// last time first (RFC 8305: remember what worked).
@Suite struct DiscoveredPeersTests {
    @Test func theAddressThatWorkedIsDialledFirst() async {
        let seen = DiscoveredPeers()
        let node = NodeID.node(7)
        let v6 = PeerAddress(host: "fd00::7", port: 7420)
        let v4 = PeerAddress(host: "10.0.0.7", port: 7420)
        #expect(await seen.found(node, at: [v6]) == .new)
        #expect(await seen.found(node, at: [v6]) == .known)
        #expect(await seen.found(node, at: [v6, v4]) == .readdressed)
        #expect(await seen.addresses(of: node) == [v6, v4])
        await seen.reached(node, at: v4)
        #expect(await seen.addresses(of: node) == [v4, v6])
        // Gone from the adverts: the last addresses are still dialled, the one that worked first.
        await seen.lost(node)
        #expect(await seen.addresses(of: node) == [v4, v6])
        #expect(await seen.found(node, at: [v6, v4]) == .again)
        // An address no longer advertised is not dialled because it once worked.
        #expect(await seen.found(node, at: [v6]) == .readdressed)
        #expect(await seen.addresses(of: node) == [v6])
    }
}
