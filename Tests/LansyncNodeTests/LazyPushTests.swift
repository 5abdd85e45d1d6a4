import LansyncCore
import LansyncNode
import LansyncTestSupport
import LansyncWire
import Testing

/// Changes passed on lazily over a pruned session (protocol 1.10, Docs/SCALE.md "Spread"), on
/// one machine driven by hand.
@Suite struct LazyPushTests {
    static let other = NodeID.node(5)

    /// Node 1's machine after node 2's hello (of `peerVersion`), both initial deltas through.
    static func settled(
        peerVersion: ProtocolVersion = .current,
        local: VersionVector = VersionVector()
    ) -> SessionMachine {
        var (m, _) = SessionMachineTests.opened(peerVersion: peerVersion, vv: VersionVector(), local: local)
        _ = m.handle(.produced(nil, now: .now))
        _ = m.handle(.received(.done(versionVector: VersionVector()), now: .now))
        return m
    }

    static func batch(_ n: Int64) -> DeltaBatch {
        var field = FieldState()
        field.assign(.integer(n), dot: Dot(node: other, counter: UInt64(n)), timestamp: HLCTimestamp(rawValue: 1))
        return DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: .named("i"), field: .named("v")), change: .state(field))],
            covers: VersionVector([other: UInt64(n)])
        )
    }

    @Test func aLiveChangeAlreadyHeldPrunesTheSenderOnce() {
        var m = Self.settled()
        _ = m.handle(.received(.batch(sequence: 1, Self.batch(1)), now: .now))
        #expect(m.handle(.applied(sequence: 1, now: .now, changed: 0)) == [.send(.ack(sequence: 1)), .send(.prune)])
        _ = m.handle(.received(.batch(sequence: 2, Self.batch(2)), now: .now))
        #expect(m.handle(.applied(sequence: 2, now: .now, changed: 0)) == [.send(.ack(sequence: 2))], "once")
        _ = m.handle(.received(.batch(sequence: 3, Self.batch(3)), now: .now))
        #expect(m.handle(.applied(sequence: 3, now: .now, changed: 1)) == [.send(.ack(sequence: 3))])
        // Both ways, as Plumtree prunes: what this side passes on over the link goes as `have` too.
        let passedOn = VersionVector([.node(7): 1])
        #expect(
            m.handle(.localChanged(localVersion: passedOn)) == [.send(.have(versionVector: passedOn))]
        )
        // A peer older than 1.10 is never told to prune.
        var old = Self.settled(peerVersion: ProtocolVersion(major: 1, minor: 9))
        _ = old.handle(.received(.batch(sequence: 1, Self.batch(1)), now: .now))
        #expect(old.handle(.applied(sequence: 1, now: .now, changed: 0)) == [.send(.ack(sequence: 1))])
    }

    /// The spread's four states, through what each side sends: pruned by this side, grafted by
    /// the peer (changes go at once again, and this side does not prune a second time), pruned by
    /// the peer (changes go as `have`s), grafted by the peer once more.
    @Test func aPeersGraftUndoesThisSidesPruneWithoutAnotherPrune() {
        func sendsHave(_ actions: [SessionMachine.Action]) -> Bool {
            actions.contains { if case .send(.have) = $0 { true } else { false } }
        }
        var m = Self.settled()
        _ = m.handle(.received(.batch(sequence: 1, Self.batch(1)), now: .now))
        #expect(m.handle(.applied(sequence: 1, now: .now, changed: 0)).contains(.send(.prune)))
        #expect(sendsHave(m.handle(.localChanged(localVersion: VersionVector([.node(7): 1])))), "pruned: lazy")
        #expect(m.handle(.received(.graft, now: .now)).isEmpty)
        let atOnce = m.handle(.localChanged(localVersion: VersionVector([.node(7): 2])))
        #expect(!sendsHave(atOnce) && !atOnce.isEmpty, "grafted by the peer: a delta at once")
        _ = m.handle(.received(.batch(sequence: 2, Self.batch(2)), now: .now))
        #expect(m.handle(.applied(sequence: 2, now: .now, changed: 0)) == [.send(.ack(sequence: 2))], "no second prune")
        #expect(m.handle(.received(.prune, now: .now)).isEmpty)
        _ = m.handle(.produced(nil, now: .now))
        #expect(sendsHave(m.handle(.localChanged(localVersion: VersionVector([.node(7): 3])))), "pruned again: lazy")
    }

    /// Plumtree's rule: a pruned link carries `have`s only, for this node's own changes as much
    /// as for those it passes on. (Until W9 on real nodes showed otherwise, own edits went at once
    /// on every link: each reached its peers twice, directly and down the tree, and the second
    /// copies pruned the tree away; at 200 nodes an edit took 1.3 s to reach every replica.)
    @Test func aPrunedSessionPassesChangesOnAndItsOwnAsHave() {
        var m = Self.settled()
        #expect(m.handle(.received(.prune, now: .now)).isEmpty)
        let forwarded = VersionVector([Self.other: 3])
        #expect(
            m.handle(.localChanged(localVersion: forwarded)) == [
                .send(.have(versionVector: forwarded))
            ]
        )
        #expect(m.handle(.localChanged(localVersion: forwarded)).isEmpty, "nothing moved since")
        let own = forwarded.joined(with: VersionVector([.node(1): 1]))
        #expect(
            m.handle(.localChanged(localVersion: own)) == [
                .send(.have(versionVector: VersionVector([.node(1): 1])))
            ],
            "this node's own edit goes as have too"
        )
        var grafted = Self.settled()
        _ = grafted.handle(.received(.prune, now: .now))
        _ = grafted.handle(.received(.graft, now: .now))
        #expect(
            grafted.handle(.localChanged(localVersion: forwarded)).contains { action in
                if case .startDelta = action { true } else { false }
            },
            "after a graft, changes passed on go at once again"
        )
    }

    /// A local edit reaches the sessions before its vector is read (``ChangeHub/notifyUnread()``):
    /// a pruned session asks for the vector, then sends its `have`, never the edit itself. (The
    /// simulation always had the vector; real nodes sent every own edit on pruned links too, a
    /// third more field states than needed in a cluster of three.)
    @Test func aPrunedSessionReadsTheVectorOfAnEditAnnouncedUnread() {
        var m = Self.settled()
        _ = m.handle(.received(.prune, now: .now))
        #expect(m.handle(.localChanged(localVersion: nil)) == [.readVersion])
        let own = VersionVector([.node(1): 1])
        #expect(m.handle(.localChanged(localVersion: own)) == [.send(.have(versionVector: own))])
        // An eager session walks the replica itself, as before.
        var eager = Self.settled()
        #expect(
            eager.handle(.localChanged(localVersion: nil)).contains { action in
                if case .startDelta = action { true } else { false }
            }
        )
    }

    @Test func aHaveTheReplicaLacksIsAskedForAfterTheWaitUnlessItArrives() {
        let local = VersionVector([.node(1): 1])
        let announced = VersionVector([Self.other: 2])
        let start = ContinuousClock.now
        var m = Self.settled(local: local)
        #expect(m.handle(.received(.have(versionVector: announced), now: start)) == [.wake(after: .milliseconds(50))])
        #expect(m.peerVersionVector[Self.other] == 2, "the peer holds what it announced: never sent back")
        #expect(m.handle(.tick(now: start + .milliseconds(30), localVersion: local)).isEmpty)
        let asked = m.handle(.tick(now: start + .milliseconds(60), localVersion: local))
        #expect(asked == [.send(.graft), .send(.summary(versionVector: local))])
        // It came through another session meanwhile: nothing is asked.
        var n = Self.settled(local: local)
        _ = n.handle(.received(.have(versionVector: announced), now: start))
        _ = n.handle(.localChanged(localVersion: local.joined(with: announced)))
        #expect(n.handle(.tick(now: start + .milliseconds(250), localVersion: local.joined(with: announced))).isEmpty)
        // Already held: no wait at all.
        var held = Self.settled(local: local.joined(with: announced))
        _ = held.handle(.tick(now: start, localVersion: local.joined(with: announced)))
        #expect(held.handle(.received(.have(versionVector: announced), now: start)).isEmpty)
    }

    /// Near its origin a change goes at once over every session, pruned ones too, to a peer of
    /// 1.11 (its copy says how near, so it prunes nothing); a peer of 1.10 still hears a `have`.
    @Test func aChangeNearItsOriginGoesAtOnceOverAPrunedSession() {
        let own = VersionVector([.node(1): 1])
        var m = Self.settled()
        _ = m.handle(.received(.prune, now: .now))
        #expect(
            m.handle(.localChanged(localVersion: nil, eager: true)).contains { action in
                if case .startDelta = action { true } else { false }
            }
        )
        var old = Self.settled(peerVersion: .views)
        _ = old.handle(.received(.prune, now: .now))
        #expect(old.handle(.localChanged(localVersion: own, eager: true)) == [.send(.have(versionVector: own))])
    }

    /// A copy the flood was expected to bring keeps its session eager; a batch with a hop count
    /// is applied as one without.
    @Test func aCopyTheFloodWasExpectedToBringPrunesNothing() {
        var m = Self.settled()
        #expect(
            m.handle(.received(.reached(hops: 1, .batch(sequence: 1, Self.batch(1))), now: .now)) == [
                .apply(sequence: 1, Self.batch(1))
            ]
        )
        #expect(m.handle(.applied(sequence: 1, now: .now, changed: 0, keep: true)) == [.send(.ack(sequence: 1))])
        _ = m.handle(.received(.batch(sequence: 2, Self.batch(2)), now: .now))
        #expect(m.handle(.applied(sequence: 2, now: .now, changed: 0)) == [.send(.ack(sequence: 2)), .send(.prune)])
    }
}
