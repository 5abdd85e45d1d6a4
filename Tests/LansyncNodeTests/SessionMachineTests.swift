import LansyncCore
import LansyncNode
import LansyncTestSupport
import LansyncWire
import Testing

@Suite struct SessionMachineTests {
    /// Node 1's machine in cluster 100, started with `local`, after the hello of node 2 (`peerVersion`,
    /// holding `vv`, resuming our last stream at `resume` if it was `resumeFor`'s): the machine
    /// and what it asked for.
    static func opened(
        peerVersion: ProtocolVersion,
        vv: VersionVector,
        resume: VersionVector = VersionVector(),
        resumeFor: NodeID? = nil,
        local: VersionVector = VersionVector()
    ) -> (SessionMachine, [SessionMachine.Action]) {
        var m = SessionMachine(
            config: SessionMachine.SessionConfig(
                nodeID: .node(1),
                clusterID: .node(100),
                role: .peer,
                name: "a",
                authenticatedPeer: .node(2)
            )
        )
        _ = m.handle(.start(versionVector: local, resume: VersionVector(), resumeFor: nil, now: .now))
        let hello = Hello(
            version: peerVersion,
            nodeID: .node(2),
            clusterID: .node(100),
            role: .peer,
            name: "b",
            versionVector: vv,
            resume: resume,
            resumeFor: resumeFor
        )
        let actions = m.handle(.received(.hello(hello), now: .now))
        return (m, actions)
    }

    /// The runner passes on what the peer was learnt to hold since it last asked, not the whole
    /// vector each time: joined, what it passed on is the machine's vector for the peer.
    @Test func whatThePeerWasLearntToHoldIsTakenOnce() {
        let hello = VersionVector([.node(2): 4, .node(3): 1])
        var (m, _) = Self.opened(peerVersion: .current, vv: hello)
        #expect(m.takePeerMoved() == hello)
        #expect(m.takePeerMoved().isEmpty, "taken: nothing new since")
        _ = m.handle(.received(.summary(versionVector: VersionVector([.node(2): 6])), now: .now))
        let moved = m.takePeerMoved()
        #expect(moved[.node(2)] == 6)
        #expect(hello.joined(with: moved) == m.peerVersionVector)
        #expect(m.takePeerMoved().isEmpty)
    }

    @Test func twoReplicasConvergeAndSayUpToDate() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        #expect(h.sides[0].replica.items == h.sides[1].replica.items)
        #expect(h.sides[0].replica.versionVector == h.sides[1].replica.versionVector)
        #expect(h.did(0) { $0.isUpToDate } && h.did(1) { $0.isUpToDate })
        #expect(h.sides[0].machine.peerVersionVector == h.sides[1].replica.versionVector)
    }

    @Test func neverMoreThanTheWindowInFlight() throws {
        let (a, b) = try sampleReplicas(items: 60)
        var h = SessionHarness(a, b, window: 2)
        h.batchSize = 2
        h.start()
        h.run()
        #expect(h.sides[0].sentBatches > 10)
        #expect(h.sides[0].maxInFlight <= 2 && h.sides[1].maxInFlight <= 2)
        #expect(h.sides[0].replica.items == h.sides[1].replica.items)
        // The stream waits one round trip per window's worth of batches, not one per batch.
        let waits = h.sides[0].machine.waitedRoundTrips
        let batches = h.sides[0].sentBatches
        #expect(waits >= batches / 2 - 1 && waits <= batches / 2 + 1, "\(waits) round trips for \(batches) batches")
    }

    @Test func aDeltaWithinTheWindowNeverWaits() throws {
        let (a, b) = try sampleReplicas(items: 6)
        var h = SessionHarness(a, b, window: 4)
        h.batchSize = 100
        h.start()
        h.run()
        #expect(h.sides[0].sentBatches >= 1 && h.sides[0].sentBatches <= 4)
        #expect(h.sides[0].machine.waitedRoundTrips == 0 && h.sides[1].machine.waitedRoundTrips == 0)
    }

    /// A session cut half way leaves the receiver with what it acknowledged; the next session
    /// sends only the rest.
    @Test func anInterruptedSessionResumes() throws {
        let (a, _) = try sampleReplicas(items: 60)
        let empty = Replica(nodeID: .node(2))
        var full = SessionHarness(a, empty)
        full.start()
        full.run()
        let everything = full.sides[0].machine.sentUpdates

        var first = SessionHarness(a, empty)
        first.cutAfter = 30
        first.start()
        first.run()
        let received = first.sides[1].replica
        #expect(!received.items.isEmpty && received.items != a.items)

        var second = SessionHarness(a, received)
        second.start()
        second.run()
        #expect(second.sides[1].replica.items == a.items)
        #expect(
            second.sides[0].machine.sentUpdates + first.sides[0].machine.sentUpdates < everything + 3 * 4,
            "resending: \(first.sides[0].machine.sentUpdates) + \(second.sides[0].machine.sentUpdates) vs \(everything)"
        )
        #expect(second.sides[0].machine.sentUpdates < everything)
    }

    /// An idle anti-entropy round sends nothing: each side knows the other holds what it has.
    /// A side whose vector changed since it last said so tells the peer once; a quiet session
    /// sends a summary each third of the idle timeout, which keeps it open.
    @Test func idleRoundsSendNothingButAKeepalive() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        func sentDuring(_ step: (inout SessionHarness) -> Void) -> [[Message]] {
            let before = h.sides.map(\.sent.count)
            step(&h)
            h.run()
            return zip(h.sides.map(\.sent), before).map { Array($0.dropFirst($1)) }
        }
        // Each side's vector grew by what it received since its hello: said once.
        func summaries(_ sent: [[Message]]) -> [Int] {
            sent.map { $0.filter { if case .summary = $0 { true } else { false } }.count }
        }
        let first = sentDuring { $0.tick(by: .seconds(16)) }
        #expect(first.map(\.count) == [1, 1] && summaries(first) == [1, 1], "\(first)")
        let idle = sentDuring { $0.tick(by: .seconds(16)) }
        #expect(idle.map(\.count) == [0, 0], "an idle round sent \(idle)")
        // 16 + 5 s after the last summary: more than a third of the 60 s idle timeout.
        let keepalive = sentDuring { $0.tick(by: .seconds(5)) }
        #expect(summaries(keepalive) == [1, 1], "no keepalive: \(keepalive)")
        // Without a reading of its replica, a side says what it holds every round (the runner reads it).
        let unknowing = sentDuring { $0.tick(by: .seconds(16), knowing: false) }
        #expect(summaries(unknowing) == [1, 1], "\(unknowing)")
    }

    /// A change nobody announced (no `localChanged`) reaches the peer at the next anti-entropy
    /// round: the side that holds it sees that the peer lacks it.
    @Test func anUnannouncedChangeGoesAtTheNextRound() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        try h.sides[0].replica.apply(
            .update([.set(.named("v"), .string("unannounced"))]),
            to: .named("a2"),
            wallMilliseconds: 1_700_000_000_100
        )
        h.tick(by: .seconds(16))
        h.run()
        #expect(h.sides[1].replica.items[.named("a2")]?.view.fields[.named("v")] == .string("unannounced"))
    }

    @Test func aLocalEditIsPushedAtOnce() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        try h.sides[0].replica.apply(
            .update([.set(.named("v"), .string("live"))]),
            to: .named("a3"),
            wallMilliseconds: 1_700_000_000_100
        )
        h.handle(0, .localChanged(localVersion: nil))
        h.run()
        #expect(h.sides[1].replica.items[.named("a3")]?.view.fields[.named("v")] == .string("live"))
    }

    /// A small live change travels as one message and is committed in one transaction: its only
    /// batch carries the `done` (protocol 1.9), and the receiver applies it and completes the
    /// stream together, its vector then covering the edit. To a 1.8 peer the same batch goes
    /// with a separate `done` right after it, and a runner that does not read ahead sends the
    /// `done` when it finds the delta over, as before.
    @Test func aSmallLiveChangeIsOneMessageAndOneTransaction() throws {
        func pushed(readsAhead: Bool) throws -> (sent: [Message], receiver: [SessionMachine.Action], vv: VersionVector)
        {
            let (a, b) = try sampleReplicas()
            var h = SessionHarness(a, b)
            h.readsAhead = readsAhead
            h.start()
            h.run()
            let (sentBefore, eventsBefore) = (h.sides[0].sent.count, h.sides[1].events.count)
            try h.sides[0].replica.apply(
                .update([.set(.named("v"), .string("live"))]),
                to: .named("a3"),
                wallMilliseconds: 1_700_000_000_100
            )
            h.handle(0, .localChanged(localVersion: h.sides[0].replica.versionVector))
            h.run()
            #expect(h.sides[1].replica.items[.named("a3")]?.view.fields[.named("v")] == .string("live"))
            return (
                Array(h.sides[0].sent[sentBefore...]), Array(h.sides[1].events[eventsBefore...]),
                h.sides[1].replica.versionVector
            )
        }
        let one = try pushed(readsAhead: true)
        #expect(one.sent.map(\.kind) == ["final batch"])
        #expect(one.receiver.filter { if case .applyFinal = $0 { true } else { false } }.count == 1)
        #expect(!one.receiver.contains(.completeStream), "no second transaction")
        let two = try pushed(readsAhead: false)
        #expect(two.sent.map(\.kind) == ["batch", "done"])
        #expect(two.receiver.contains(.completeStream))
        #expect(one.vv == two.vv, "the receiver's vector covers the edit either way")

        // A 1.8 peer: the last batch, then its done at once.
        var (m, _) = Self.opened(peerVersion: ProtocolVersion(major: 1, minor: 8), vv: VersionVector())
        let batch = DeltaBatch(updates: [], covers: VersionVector([.node(1): 1]), base: VersionVector())
        let sent = m.handle(.produced(batch, now: .now, last: true)).compactMap {
            if case .send(let message) = $0 { message.kind } else { nil }
        }
        #expect(sent == ["batch", "done"])
    }

    /// A live change's `done` names the writers the change moved, not every writer the receiver
    /// holds (which a relay's receivers number in the thousands, sent with every change).
    @Test func aLiveChangesDoneNamesOnlyTheWritersItMoved() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        let held = h.sides[1].replica.versionVector
        #expect(held.nodes.count >= 2, "the sample needs writers beyond the one that edits")
        try h.sides[0].replica.apply(
            .update([.set(.named("v"), .string("live"))]),
            to: .named("a1"),
            wallMilliseconds: 1_700_000_000_100
        )
        let before = h.sides[0].sent.count
        h.handle(0, .localChanged(localVersion: h.sides[0].replica.versionVector))
        let done = h.sides[0].sent[before...].compactMap { message -> VersionVector? in
            switch message {
            case .finalBatch(_, _, let done), .done(let done): done
            default: nil
            }
        }
        let writer = h.sides[0].replica.writer
        #expect(done == [VersionVector([writer: held[writer]])], "\(done)")
        h.run()
        #expect(h.sides[1].replica.items[.named("a1")]?.view.fields[.named("v")] == .string("live"))
    }

    /// A change announced with the replica's vector, which the peer is known to hold already (a
    /// batch another session applied that came from this peer too), plans no delta: nothing is
    /// read; one the peer lacks plans one at once.
    @Test func aChangeThePeerHoldsReadsNothing() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        func plans(_ i: Int, during step: (inout SessionHarness) throws -> Void) rethrows -> Bool {
            let before = h.sides[i].events.count
            try step(&h)
            return h.sides[i].events[before...].contains { if case .startDelta = $0 { true } else { false } }
        }
        let held = h.sides[0].replica.versionVector
        #expect(!plans(0) { $0.handle(0, .localChanged(localVersion: held)) }, "a delta planned for nothing")
        try h.sides[0].replica.apply(
            .update([.set(.named("v"), .string("new"))]),
            to: .named("a1"),
            wallMilliseconds: 1_700_000_000_100
        )
        let newer = h.sides[0].replica.versionVector
        #expect(
            plans(0) { $0.handle(0, .localChanged(localVersion: newer)) },
            "a change the peer lacks planned no delta"
        )
        h.run()
        #expect(h.sides[1].replica.items[.named("a1")]?.view.fields[.named("v")] == .string("new"))
    }

    /// A tick carrying an older reading of the replica's vector than a change already announced
    /// (the runner's inputs are merged from several streams, each read when it fired: a tick read
    /// before a change can be handled after it) must not make the session forget the change: the
    /// delta after the one under way still carries it. Before, the tick replaced the known vector,
    /// the next delta found the peer covering it and read nothing, and the change waited for an
    /// anti-entropy round (a relay's member got a burst of changes 2-7 s late, W10).
    @Test func aStaleTickDoesNotHideAnAnnouncedChange() throws {
        let (a, b) = try sampleReplicas()
        // One batch in flight, one field state each: the first delta is still under way (its
        // second batch waits for the first's acknowledgement) when the second change comes.
        var h = SessionHarness(a, b, window: 1)
        h.batchSize = 1
        h.start()
        h.run()
        func edit(_ item: String, _ value: String) throws -> VersionVector {
            try h.sides[0].replica.apply(
                .update([.set(.named("v"), .string(value))]),
                to: .named(item),
                wallMilliseconds: 1_700_000_000_100
            )
            return h.sides[0].replica.versionVector
        }
        _ = try edit("a1", "first")
        let first = try edit("a2", "first")
        h.handle(0, .localChanged(localVersion: first))
        let second = try edit("a3", "second")
        h.handle(0, .localChanged(localVersion: second))
        h.handle(0, .tick(now: h.now, localVersion: first))
        h.run()
        #expect(h.sides[1].replica.items[.named("a2")]?.view.fields[.named("v")] == .string("first"))
        #expect(h.sides[1].replica.items[.named("a3")]?.view.fields[.named("v")] == .string("second"))
    }

    /// What the peer streamed to this side is never streamed back to it: after A's edits reach
    /// B, a change of B's replica (the poll, another session) makes B send nothing of them.
    @Test func aChangeIsNotEchoedToItsSender() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        for i in 0..<5 {
            try h.sides[0].replica.apply(
                .update([.set(.named("v"), .string("live \(i)"))]),
                to: .named("a\(i)"),
                wallMilliseconds: 1_700_000_000_100
            )
        }
        h.handle(0, .localChanged(localVersion: nil))
        h.run()
        #expect(h.sides[1].replica.items[.named("a4")]?.view.fields[.named("v")] == .string("live 4"))
        let sentBack = h.sides[1].machine.sentUpdates
        h.handle(1, .localChanged(localVersion: nil))
        h.run()
        #expect(h.sides[1].machine.sentUpdates == sentBack, "B sent A's own changes back to it")
    }

    /// A removed field (protocol 1.6) is never sent to an older peer: a batch that carries one
    /// ends the session with `protocol-version` and words that say to upgrade; a newer peer gets it.
    @Test func aRemovalGoesOnlyToAPeerThatReadsIt() throws {
        var state = FieldState()
        state.assign(.integer(1), dot: Dot(node: .node(1), counter: 1), timestamp: HLCTimestamp(rawValue: 1))
        state.unset(dot: Dot(node: .node(1), counter: 2), timestamp: HLCTimestamp(rawValue: 2))
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: .named("i"), field: .named("f")), state: state)],
            covers: VersionVector([.node(1): 2])
        )
        #expect(batch.needsProtocol16)
        for (version, refused) in [(ProtocolVersion(major: 1, minor: 5), true), (.current, false)] {
            var (m, _) = Self.opened(peerVersion: version, vv: VersionVector(), local: VersionVector([.node(1): 2]))
            let actions = m.handle(.produced(batch, now: .now))
            let closed = actions.contains {
                if case .close(let error?, _) = $0 {
                    error.code == .protocolVersion && error.message.contains("upgrade")
                } else {
                    false
                }
            }
            #expect(closed == refused, "peer \(version): \(actions)")
            #expect(actions.contains { if case .send(.batch) = $0 { true } else { false } } == !refused)
        }
    }

    /// Field deltas go only to a peer of protocol 1.2, against what it is known to hold whole:
    /// its hello's vector, then what its own batches covered; never part of our stream before
    /// its `done` (the fields a stream has not reached yet may still hold older states there).
    @Test func deltasAreTakenAgainstWhatThePeerHoldsWhole() throws {
        func opened(peerVersion: ProtocolVersion, vv: VersionVector) -> (SessionMachine, [SessionMachine.Action]) {
            Self.opened(peerVersion: peerVersion, vv: vv, resume: VersionVector([.node(1): 7]), resumeFor: .node(1))
        }
        let announced = VersionVector([.node(2): 5, .node(3): 2])
        let (old, oldActions) = opened(peerVersion: ProtocolVersion(major: 1, minor: 1), vv: announced)
        #expect(old.deltaBase == nil)
        #expect(
            oldActions.contains(
                .startDelta(
                    peerVersionVector: announced.joined(with: VersionVector([.node(1): 7])),
                    initial: true,
                    deltaBase: nil
                )
            )
        )

        var (m, actions) = opened(peerVersion: .current, vv: announced)
        // The resume point (part of an earlier stream) plans what to send, not the base.
        #expect(
            actions.contains(
                .startDelta(
                    peerVersionVector: announced.joined(with: VersionVector([.node(1): 7])),
                    initial: true,
                    deltaBase: announced
                )
            )
        )
        let covers = VersionVector([.node(1): 9])
        _ = m.handle(.produced(DeltaBatch(updates: [], covers: covers, base: announced), now: .now))
        _ = m.handle(.received(.ack(sequence: 1), now: .now))
        #expect(m.deltaBase == announced, "an acknowledged batch is part of a stream, not held whole")
        _ = m.handle(.produced(nil, now: .now))
        #expect(m.deltaBase == announced.joined(with: covers), "after our done, the peer holds the stream whole")
        _ = m.handle(
            .received(.batch(sequence: 1, DeltaBatch(updates: [], covers: VersionVector([.node(4): 3]))), now: .now)
        )
        #expect(m.deltaBase == announced.joined(with: covers).joined(with: VersionVector([.node(4): 3])))
    }

    /// Retired writers fold (Docs/MERGE.md): the hello tells the vector and the resume point
    /// without the writers folded, and the folds beside them; the peer reads them back whole. A
    /// report is told folded (and marked) only when the member had seen every fold. Summaries
    /// and `done` leave the folds out too, but only for a peer that reads them back.
    @Test func foldedWritersStayOutOfWhatIsToldAndComeBackOnReading() throws {
        let retired = NodeID(high: NodeID.node(1).high, low: 77)
        let folded = VersionVector([retired: 40])
        let mine = VersionVector([.node(1): 3, retired: 40])
        func machine(_ id: UInt64, peer: UInt64) -> SessionMachine {
            var config = SessionMachine.SessionConfig(
                nodeID: .node(id),
                clusterID: .node(100),
                role: .peer,
                name: "n\(id)",
                authenticatedPeer: .node(peer)
            )
            config.reports = [
                Hello.Report(nodeID: .node(5), at: 1, seen: VersionVector([.node(5): 2, retired: 40])),
                Hello.Report(nodeID: .node(6), at: 1, seen: VersionVector([.node(6): 2, retired: 39])),
            ]
            return SessionMachine(config: config)
        }
        var a = machine(1, peer: 2)
        let said = a.handle(.start(versionVector: mine, folded: folded, now: .now))
        guard case .send(.hello(let hello))? = said.first else {
            Issue.record("no hello: \(said)")
            return
        }
        #expect(hello.versionVector == VersionVector([.node(1): 3]) && hello.folded == folded)
        #expect(
            hello.reports.map(\.seen) == [VersionVector([.node(5): 2]), VersionVector([.node(6): 2, retired: 39])]
        )
        #expect(hello.reports.map(\.toldFolded) == [true, false], "node 6 had not seen all the retired writer wrote")

        var b = machine(2, peer: 1)
        _ = b.handle(.start(versionVector: VersionVector(), now: .now))
        let actions = b.handle(.received(.hello(hello), now: .now))
        guard case .peerReady(let read)? = actions.first else {
            Issue.record("not ready: \(actions)")
            return
        }
        #expect(read.versionVector == mine && read.reports == hello.reports)
        #expect(b.peerVersionVector == mine, "the retired writer's fields are not sent back")
        _ = b.handle(.received(.summary(versionVector: VersionVector([.node(1): 4])), now: .now))
        #expect(b.peerVersionVector == VersionVector([.node(1): 4, retired: 40]))

        // a's summaries leave the folded writer out for a 1.8 peer, and keep it for a 1.7 one.
        for (minor, expected) in [(8, VersionVector([.node(1): 3])), (7, mine)] {
            var a = machine(1, peer: 2)
            _ = a.handle(.start(versionVector: mine, folded: folded, now: .now))
            let peerHello = Hello(
                version: ProtocolVersion(major: 1, minor: UInt32(minor)),
                nodeID: .node(2),
                clusterID: .node(100),
                role: .peer,
                name: "n2",
                versionVector: mine
            )
            _ = a.handle(.received(.hello(peerHello), now: .now))
            #expect(a.asTold(mine) == expected, "to a 1.\(minor) peer")
        }
    }

    /// A large delta is announced to a 1.2 peer (`expect`), which counts what arrives against it
    /// until the `done`; a small one, or one for a 1.1 peer, is not.
    @Test func aLargeDeltaIsAnnouncedAndCounted() throws {
        let (a, b) = try sampleReplicas(items: 60)
        var h = SessionHarness(a, b)
        h.start()
        h.run()
        #expect(h.sides[0].machine.handle(.planned(fieldStates: 5)).isEmpty)
        #expect(
            h.sides[0].machine.handle(.planned(fieldStates: 250_000)) == [.send(.expect(fieldStates: 250_000))]
        )
        var receiver = h.sides[1].machine
        let before = receiver.receivedUpdates
        _ = receiver.handle(.received(.expect(fieldStates: 250_000), now: .now))
        #expect(receiver.incoming?.expected == 250_000 && receiver.incoming?.receivedBefore == before)
        _ = receiver.handle(.received(.done(versionVector: VersionVector()), now: .now))
        #expect(receiver.incoming == nil)

        var old = SessionMachine(
            config: .init(nodeID: .node(1), clusterID: .node(99), role: .peer, name: "a", authenticatedPeer: .node(2))
        )
        _ = old.handle(.start(versionVector: VersionVector(), now: .now))
        _ = old.handle(
            .received(
                .hello(
                    Hello(
                        version: ProtocolVersion(major: 1, minor: 1),
                        nodeID: .node(2),
                        clusterID: .node(99),
                        role: .peer,
                        name: "b",
                        versionVector: VersionVector()
                    )
                ),
                now: .now
            )
        )
        #expect(old.handle(.planned(fieldStates: 250_000)).isEmpty, "a 1.1 peer does not know `expect`")
    }

    @Test func receivingReadsWell() {
        let r = NodeStatus.Peer.Receiving(received: 41_210, expected: 100_000, etaSeconds: 12)
        #expect(r.summary == "41,210 of ~100,000 (41%, 12 s left)")
        #expect(NodeStatus.Peer.Receiving.grouped(999) == "999" && NodeStatus.Peer.Receiving.grouped(1_000) == "1,000")
    }

    @Test func oneShotFinishesWhenBothSidesAreUpToDate() throws {
        let (a, b) = try sampleReplicas()
        var h = SessionHarness(a, b, roleA: .oneShot)
        h.start()
        h.run()
        #expect(h.did(0) { $0.isFinished })
        #expect(!h.did(1) { $0.isFinished })
        #expect(h.sides[0].replica.items == h.sides[1].replica.items)
    }

    @Test(arguments: [
        ("cluster", ProtocolError.Code.wrongCluster),
        ("identity", .identityMismatch),
        ("version", .protocolVersion),
        ("self", .duplicateNodeID),
    ])
    func badHellosAreRefused(kind: String, code: ProtocolError.Code) {
        let me = NodeID.node(1)
        let peer = NodeID.node(2)
        var machine = SessionMachine(
            config: .init(
                nodeID: me,
                clusterID: .node(99),
                role: .peer,
                name: "a",
                authenticatedPeer: kind == "self" ? me : peer
            )
        )
        _ = machine.handle(.start(versionVector: VersionVector(), now: .now))
        var hello = Hello(
            nodeID: kind == "self" ? me : peer,
            clusterID: .node(99),
            role: .peer,
            name: "b",
            versionVector: VersionVector()
        )
        switch kind {
        case "cluster": hello.clusterID = .node(98)
        case "identity": hello.nodeID = .node(3)
        case "version": hello.version = ProtocolVersion(major: 2, minor: 0)
        default: break
        }
        let actions = machine.handle(.received(.hello(hello), now: .now))
        #expect(actions.compactMap(\.closeError).map(\.code) == [code])
        #expect(actions.contains(.send(.error(actions.compactMap(\.closeError)[0]))))
        #expect(machine.phase == .closed)
        #expect(!actions.contains { if case .startDelta = $0 { true } else { false } }, "no data before a good hello")
    }

    @Test func unexpectedMessagesAndBadBytesCloseTheSession() {
        var machine = SessionMachine(
            config: .init(nodeID: .node(1), clusterID: .node(99), role: .peer, name: "a", authenticatedPeer: .node(2))
        )
        _ = machine.handle(.start(versionVector: VersionVector(), now: .now))
        let early = machine.handle(
            .received(.batch(sequence: 1, DeltaBatch(updates: [], covers: VersionVector())), now: .now)
        )
        #expect(early.compactMap(\.closeError).map(\.code) == [.unexpectedMessage])

        var other = SessionMachine(
            config: .init(nodeID: .node(1), clusterID: .node(99), role: .peer, name: "a", authenticatedPeer: .node(2))
        )
        _ = other.handle(.start(versionVector: VersionVector(), now: .now))
        let garbage = other.handle(.receivedInvalid(.frameTooLarge(1 << 30), now: .now))
        #expect(garbage.compactMap(\.closeError).map(\.code) == [.frameTooLarge])
    }

    @Test func silentOrStalledPeersTimeOut() throws {
        var silent = SessionMachine(
            config: .init(nodeID: .node(1), clusterID: .node(99), role: .peer, name: "a", authenticatedPeer: .node(2))
        )
        let t0 = ContinuousClock.now
        _ = silent.handle(.start(versionVector: VersionVector(), now: t0))
        #expect(silent.handle(.tick(now: t0 + .seconds(5))).isEmpty)
        #expect(silent.handle(.tick(now: t0 + .seconds(11))).compactMap(\.closeError).map(\.code) == [.timeout])

        // A peer that stops acknowledging: the sender gives up after the ack timeout.
        let (a, b) = try sampleReplicas(items: 30)
        var h = SessionHarness(a, b)
        h.deaf = 0  // A never hears B, so B gets no batch acknowledged
        h.start()
        h.run()
        #expect(h.sides[1].sentBatches > 0 && h.sides[1].acksReceived == 0)
        h.tick(by: .seconds(61))
        #expect(h.did(1) { $0.closeError?.code == .timeout })
    }
}

@Suite struct BackoffTests {
    @Test func growsWithJitterUpToTheCap() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
        var rng = SplitMix64(seed: 3)
        var previousCeiling = Duration.zero
        for _ in 0..<12 {
            let ceiling = backoff.ceiling
            let wait = backoff.next(using: &rng)
            #expect(wait >= ceiling / 2 && wait <= ceiling)
            #expect(ceiling >= previousCeiling && ceiling <= .seconds(5))
            previousCeiling = ceiling
        }
        #expect(previousCeiling == .seconds(5))
        backoff.reset()
        #expect(backoff.ceiling == .milliseconds(100))
    }

    @Test func parsesAddresses() {
        #expect(PeerAddress(parsing: "127.0.0.1:7420") == PeerAddress(host: "127.0.0.1", port: 7420))
        #expect(PeerAddress(parsing: "[::1]:80")?.host == "::1")
        #expect(PeerAddress(parsing: "localhost:1")?.host == "127.0.0.1")
        for bad in ["", "host", "host:", ":80", "h:99999", "h:x"] {
            #expect(PeerAddress(parsing: bad) == nil, "\(bad)")
        }
    }
}
