import LansyncCore
import LansyncNode
import LansyncTestSupport
import LansyncWire
import Testing

/// What a member says is checked against bounds before it is kept (DESIGN invariant 11): a
/// session refuses a peer whose vectors name more writers than the node takes in, so what it
/// keeps of the peer stays bounded whatever the peer claims.
@Suite struct PeerBoundsTests {
    let me = NodeID.node(1)
    let peer = NodeID.node(2)
    let cluster = NodeID.node(99)
    let now = ContinuousClock.now

    func machine(maxWriters: Int) -> SessionMachine {
        var config = SessionMachine.SessionConfig(
            nodeID: me,
            clusterID: cluster,
            role: .peer,
            name: "me",
            authenticatedPeer: peer
        )
        config.maxWriters = maxWriters
        var machine = SessionMachine(config: config)
        _ = machine.handle(.start(versionVector: VersionVector(), now: now))
        return machine
    }

    func writers(_ range: Range<UInt64>) -> VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: range.map { (NodeID.node(1000 + $0), UInt64(1)) }))
    }

    func refusal(_ actions: [SessionMachine.Action]) -> ProtocolError? {
        for case .close(let error?, _) in actions { return error }
        return nil
    }

    func hello(_ vector: VersionVector) -> Message {
        .hello(Hello(nodeID: peer, clusterID: cluster, role: .peer, name: "peer", versionVector: vector))
    }

    @Test func aHelloNamingTooManyWritersIsRefused() {
        var within = machine(maxWriters: 100)
        #expect(refusal(within.handle(.received(hello(writers(0..<100)), now: now))) == nil)
        var over = machine(maxWriters: 100)
        let error = refusal(over.handle(.received(hello(writers(0..<101)), now: now)))
        #expect(error?.code == .rejectedChange)
        #expect(error?.message.contains("100 writers") == true)
        #expect(over.phase == .closed)
    }

    /// Batches each under the bound, whose covers together name more writers than it: the
    /// session ends at the batch that crosses it, before that batch is applied.
    @Test func coversAddingUpPastTheBoundEndTheSession() {
        var m = machine(maxWriters: 100)
        _ = m.handle(.received(hello(VersionVector()), now: now))
        let first = m.handle(.received(.batch(sequence: 1, DeltaBatch(updates: [], covers: writers(0..<60))), now: now))
        #expect(first.contains(where: { if case .apply = $0 { true } else { false } }))
        let second = m.handle(
            .received(.batch(sequence: 2, DeltaBatch(updates: [], covers: writers(60..<120))), now: now)
        )
        #expect(refusal(second)?.code == .rejectedChange)
        #expect(!second.contains(where: { if case .apply = $0 { true } else { false } }))
        #expect(m.peerVersionVector.counters.count <= 120)
    }

    @Test func aSummaryNamingTooManyWritersIsRefused() {
        var m = machine(maxWriters: 100)
        _ = m.handle(.received(hello(VersionVector()), now: now))
        #expect(
            refusal(m.handle(.received(.summary(versionVector: writers(0..<101)), now: now)))?.code == .rejectedChange
        )
    }
}
