import LansyncCore
import LansyncNode
import LansyncTestSupport
import Testing

/// The active and passive views (issue 33) as a value: what a node dials, accepts and keeps.
@Suite struct PeerViewTests {
    static func members(_ range: ClosedRange<UInt64>) -> [NodeID] { range.map(NodeID.node) }

    @Test func aSmallClusterIsAFullMesh() {
        var rng = SplitMix64(seed: 1)
        var view = PeerView(me: .node(1))
        view.learn(Self.members(2...8), using: &rng)
        #expect(view.isFullMesh && view.target == 7)
        let dialled = view.toDial(using: &rng)
        #expect(Set(dialled) == Set(Self.members(2...8)), "everyone, once")
        #expect(view.toDial(using: &rng).isEmpty, "dials under way are not offered again")
        for peer in dialled { view.opened(peer, dialled: true) }
        #expect(view.active.values.allSatisfy { $0 == .fullMesh })
        #expect(view.accepts(.node(40), alone: false), "a small cluster takes every member")
    }

    @Test func aLargeClusterKeepsABoundedView() {
        var rng = SplitMix64(seed: 2)
        let limits = PeerView.Limits()
        var view = PeerView(me: .node(1), limits: limits)
        view.learn(Self.members(2...500), using: &rng)
        #expect(view.passive.count == limits.passive, "what members name costs a bounded table")
        #expect(!view.isFullMesh && view.target == limits.active)
        let dialled = view.toDial(using: &rng)
        #expect(dialled.count == limits.active)
        for peer in dialled { view.opened(peer, dialled: true) }
        #expect(view.toDial(using: &rng).isEmpty && view.active.values.allSatisfy { $0 == .chosen })
        // Room for `slack` members who dial it, then none, unless the one dialling is alone.
        for n in UInt64(600)..<UInt64(600 + limits.slack) {
            #expect(view.accepts(.node(n), alone: false))
            view.opened(.node(n), dialled: false)
        }
        #expect(!view.accepts(.node(700), alone: false))
        #expect(view.accepts(.node(700), alone: true))
        #expect(view.active[.node(600)] == .accepted)
        #expect(view.excess(using: &rng).isEmpty)
    }

    @Test func aLostPeerGoesBackToThePassiveViewAndIsReplaced() {
        var rng = SplitMix64(seed: 3)
        var view = PeerView(me: .node(1))
        view.learn(Self.members(2...40), using: &rng)
        let dialled = view.toDial(using: &rng)
        for peer in dialled { view.opened(peer, dialled: true) }
        view.closed(dialled[0], using: &rng)
        #expect(view.active[dialled[0]] == nil && view.passive[dialled[0]] != nil)
        #expect(view.toDial(using: &rng).count == 1, "one to replace it")
    }

    @Test func unreachableMembersAreTriedLastAndMakeRoomFirst() {
        var rng = SplitMix64(seed: 4)
        var view = PeerView(me: .node(1), limits: PeerView.Limits(active: 2, slack: 1, passive: 4, fullMeshUpTo: 2))
        view.learn(Self.members(2...5), using: &rng)
        let first = view.toDial(using: &rng)
        for peer in first { view.failed(peer) }
        let second = view.toDial(using: &rng)
        #expect(Set(second).isDisjoint(with: first), "members that answered nothing yet go first")
        for peer in second { view.failed(peer) }
        view.failed(first[0])
        view.learn([.node(9)], using: &rng)
        #expect(view.passive[first[0]] == nil, "the member with most failures made room")
        #expect(view.passive.count == 4)
        #expect(view.antiEntropyPartner(using: &rng) == .node(9), "anti-entropy goes where dials answered")
    }

    @Test func aSampleNeverNamesItsReceiverAndARestartKeepsThePeers() {
        var rng = SplitMix64(seed: 5)
        var view = PeerView(me: .node(1))
        view.learn(Self.members(2...30), using: &rng)
        for peer in view.toDial(using: &rng) { view.opened(peer, dialled: true) }
        let receiver = view.active.keys.sorted()[0]
        for _ in 0..<20 {
            let sample = view.sample(8, for: receiver, using: &rng)
            #expect(sample.count == 8 && !sample.contains(receiver) && !sample.contains(.node(1)))
        }
        view.restarted()
        #expect(view.active.isEmpty && view.passive.count == 29 && view.dialling.isEmpty)
    }
}
