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
        await gossip.learn(hello(from: sender, passing: passed), me: me)
        #expect(await gossip.peers.dialingCount == WireLimits.maxAddresses)
        // The same addresses again start nothing more.
        await gossip.learn(hello(from: sender, passing: passed), me: me)
        #expect(await gossip.peers.dialingCount == WireLimits.maxAddresses)
        gossip.finish()
        var asked: [NodeID] = []
        for await node in gossip.stream { asked.append(node) }
        #expect(asked.count == WireLimits.maxAddresses && Set(asked).count == asked.count)
        #expect(!asked.contains(me) && !asked.contains(sender) && !asked.contains(.node(3)))
        for node in asked { await gossip.peers.forget(node) }
        #expect(await gossip.peers.dialingCount == 0)
        #expect(await gossip.peers.address(of: asked[0]) == nil)
    }
}
