import LansyncCore
import LansyncReplica
import LansyncTransport
import LansyncWire

/// Carries out one session's ``SessionMachine`` actions: each action is a method here that does
/// what the machine asked (a message sent, a batch applied in one transaction, a delta planned or
/// read on the blocking pool) and reports back the event it led to, whose actions run next. The
/// protocol's decisions are the machine's; the driver only executes them.
struct SessionDriver {
    /// What the driver reads: the peer's messages, the clock's ticks and local changes (events of
    /// the machine), and the end of the peer's stream.
    enum Input: Sendable {
        case event(SessionMachine.Event)
        case peerClosed
    }

    let runner: SessionRunner
    /// This session's subscription to the node's change hub: changes this session applies are
    /// announced to every other session but this one.
    let subscription: Int
    /// The connection's bytes, for progress.
    let wire: WireCounters
    let send: @Sendable (Message) async throws -> Void
    /// Reports a tick to the machine after a while (``SessionMachine/Action/wake(after:)``).
    let wake: @Sendable (Duration) -> Void
    private(set) var machine: SessionMachine
    private(set) var outcome = SessionOutcome()
    /// The outgoing delta being read, if any.
    private var delta: (any DeltaSource)?
    /// Batches of it read ahead of the machine's asking (nil: the delta ends there), so that a
    /// small delta's last batch is known to be the last and goes with its `done`.
    private var readAhead: [DeltaBatch?] = []
    /// What was last reported to the observer.
    private var reported = SessionObserver.Progress()
    /// The hub's ``ChangeHub/resets`` when this session last recorded its peer's whole vector.
    private var recordedResets: Int
    /// When the replica last rejoined as the session said hello: a batch or stream end recorded
    /// after another rejoin is refused (``StoreError/rejoinedSince(session:replica:)``).
    private var rejoinedAt: UInt64?
    /// The hops the peer's last batch said its changes took (``Message/reached(hops:_:)``).
    private var receivedHops: UInt8?
    /// How far this replica's own signature vouches for what the peer claims of its writers:
    /// a claim beyond it witnesses no rollback.
    private var witness: OwnWitness
    /// This node's own writes as of the last signed report sent on this session (the sum of its
    /// writers' entries): a report goes again only once they moved.
    private var vouchedOwn: UInt64 = 0
    /// The last signed report sent on this session and when: what this node has seen of others'
    /// writes travels too, at most every ``progressVouchInterval``.
    private var vouched: (report: Hello.SignedReport, at: ContinuousClock.Instant)?
    /// How often a session passes on this node's progress when only others' writes moved it: a
    /// member's signed report is the only one the others take of it second-hand, so without it
    /// a member that receives but rarely writes would look behind to every replica it does not
    /// meet (collection waits for it) until its next hello.
    static let progressVouchInterval: Duration = .seconds(10)
    /// How long a session must have moved no field state before it passes on progress: a report
    /// is a signed vector of every writer, and one per session per interval while changes flow
    /// cost a cluster of 200 more bytes and CPU per edit than the edits (W9: 546 bytes sent per
    /// node per edit against 406). Collection waits on reports for minutes, not seconds: the
    /// report can wait for the quiet that follows a burst (an anti-entropy round's up-to-date
    /// point finds it).
    static let progressQuiet: Duration = .seconds(5)
    /// The field states this session had moved when it last looked, and since when that count
    /// stood: quiet once it stood for ``progressQuiet``.
    private var moved = (count: 0, since: ContinuousClock.now)

    init(
        runner: SessionRunner,
        subscription: Int,
        wire: WireCounters,
        send: @escaping @Sendable (Message) async throws -> Void,
        wake: @escaping @Sendable (Duration) -> Void = { _ in }
    ) {
        self.runner = runner
        self.subscription = subscription
        self.wire = wire
        self.send = send
        self.wake = wake
        self.machine = SessionMachine(config: runner.config)
        self.recordedResets = runner.hub.resets
        self.witness = OwnWitness(node: runner.config.nodeID, writer: runner.config.writer)
        // The hello carries this node's own report: the next one goes once the vector moves.
        if let own = runner.config.signedReports.first(where: { $0.nodeID == runner.config.nodeID }) {
            vouched = (own, .now)
        }
    }

    /// How the session went so far, with what it moved (the machine's field states, the
    /// connection's bytes): what the runner returns however the session ends.
    var result: SessionOutcome {
        var result = outcome
        result.counters = counters
        return result
    }

    /// What the session moved so far.
    private var counters: SessionCounters {
        var counters = machine.counters
        counters.sentBytes = wire.sent
        counters.receivedBytes = wire.received
        return counters
    }

    private var store: any ReplicaStorage { runner.store }
    private var io: BlockingIO { runner.io }

    /// How long a session that refused a member back from being away waits for it to close,
    /// reading and dropping what it sends meanwhile.
    static let linger: Duration = .seconds(2)

    /// Starts the session, then handles `inputs` until it is over.
    ///
    /// A session that refused the peer as away (an error it must act on: rejoin) does not close at
    /// once: the peer is still writing (its first delta follows its hello), and would see its
    /// writes fail before it reads the error. It lingers until the peer closes, at most
    /// ``linger`` (checked at each input, so at worst until the next tick), taking nothing in. A
    /// peer that broke the protocol is closed on at once.
    mutating func run<Inputs: AsyncSequence>(_ inputs: Inputs) async throws where Inputs.Element == Input {
        if try await start() { return }
        var lingerUntil: ContinuousClock.Instant?
        for try await input in inputs {
            if let lingerUntil {
                if case .peerClosed = input { return }
                if ContinuousClock.now >= lingerUntil { return }
                continue
            }
            switch input {
            case .peerClosed:
                if machine.phase != .closed { outcome.connectionError = "the peer closed the connection" }
                return
            case .event(let event):
                if case .received(let message, _) = event, message.isBatch {
                    // A catch-up batch (the peer's first delta) brings what was missing here: it
                    // spreads from here as if made here.
                    receivedHops = machine.peerCatchingUp ? HopRecord.caughtUp : message.hops
                }
                if case .received(.report(let report), _) = event, machine.phase == .open {
                    await runner.observer.reported(report)
                }
                if try await perform(machine.handle(event)) {
                    guard outcome.error?.code == .away else { return }
                    lingerUntil = .now + Self.linger
                }
            }
            await report()
        }
    }

    /// Reads where the replica and the peer's last stream stand and says hello; true if the
    /// session is already over.
    private mutating func start() async throws -> Bool {
        let (store, peer) = (self.store, runner.config.authenticatedPeer)
        let start: SessionMachine.Event
        do {
            let begins = try await io.run { try store.sessionStart(with: peer) }
            rejoinedAt = begins.rejoinedAt
            start = .start(
                versionVector: begins.vector,
                resume: begins.resume?.covers ?? VersionVector(),
                resumeFor: begins.resume?.incarnation,
                folded: begins.folded,
                now: .now
            )
        } catch {
            // Nothing was sent yet: the peer learns why from an error message.
            _ = machine.handle(.start(versionVector: VersionVector(), now: .now))
            _ = try await perform(machine.handle(.storageFailed("reading the replica: \(error)")))
            return true
        }
        return try await perform(machine.handle(start))
    }

    /// Performs actions (and those they lead to); returns true when the session is over.
    mutating func perform(_ initial: [SessionMachine.Action]) async throws -> Bool {
        var queue = initial[...]
        while let action = queue.popFirst() {
            switch action {
            case .send(let message):
                try await send(stamped(message))
                if message.endsDelta { try await vouchIfMoved() }
            case let .apply(sequence, batch):
                queue += await apply(batch, sequence: sequence)
            case let .applyFinal(sequence, batch):
                queue += await apply(batch, sequence: sequence, completingStream: true)
            case .completeStream:
                queue += await completeStream()
            case let .startDelta(vv, initial, deltaBase):
                let (first, later) = await startDelta(for: vv, initial: initial, deltaBase: deltaBase)
                // Before the batches the queue already asks for.
                queue.insert(contentsOf: first, at: queue.startIndex)
                queue += later
            case .produceBatch:
                queue += await produceBatch()
            case .sendSummary:
                queue += try await sendSummary()
            case .readVersion:
                queue += await readVersion()
            case .wake(let after):
                wake(after)
            case .peerReady(let hello):
                // A refusal goes before the delta the queue already asks for.
                queue.insert(contentsOf: await peerReady(hello), at: queue.startIndex)
            case .upToDate:
                try await vouchIfMoved(progress: true)
                outcome.reachedUpToDate = true
                outcome.peerHolds = machine.peerVersionVector
                await runner.observer.upToDate(machine.peerVersionVector)
            case .finished:
                return true
            case let .close(error, peerError):
                outcome.error = error
                outcome.peerError = peerError
                return true
            }
        }
        return false
    }

    /// After a delta this side sent: this node's own signed report, if its own writes moved since
    /// the last one this session sent, to a peer that takes it. The peer then holds a report
    /// signed by this node covering every write of its own it received, which it passes on and
    /// which proves a rollback of this replica to this replica (``OwnWitness``).
    ///
    /// `progress`: at an up-to-date point, when only others' writes moved this replica: sent if
    /// the vector moved since the last report sent here, at most every ``progressVouchInterval``,
    /// and only once the session has been quiet for ``progressQuiet``.
    private mutating func vouchIfMoved(progress: Bool = false) async throws {
        let now = ContinuousClock.now
        // (Checked before anything is signed: an up-to-date point comes after every exchange.)
        if progress {
            let count = machine.counters.sentUpdates + machine.counters.receivedUpdates
            if count != moved.count { moved = (count, now) }
            if now - moved.since < Self.progressQuiet { return }
            if let vouched, now - vouched.at < Self.progressVouchInterval { return }
        }
        guard let peer = machine.peer, peer.version >= .signedReports, let report = await runner.vouch() else { return }
        let node = runner.config.nodeID
        let own = report.seen.counters.reduce(UInt64(0)) { sum, entry in
            entry.key.isWriter(of: node) || entry.key == runner.config.writer ? sum &+ entry.value : sum
        }
        if progress {
            guard report.seen != vouched?.report.seen else { return }
        } else {
            guard own != vouchedOwn else { return }
        }
        vouchedOwn = own
        vouched = (report, now)
        try await send(.report(report))
    }

    /// A batch with the hops its changes took to reach this node, to a peer that reads them
    /// (protocol 1.11); any other message, or to an older peer, as it is.
    private func stamped(_ message: Message) -> Message {
        guard let peer = machine.peer, message.isBatch else { return message }
        // Proofs go only to a peer that reads them (protocol 1.14).
        let message = peer.version >= .signedWrites ? message : message.withoutProofs
        guard peer.version >= .hops, let covers = message.batchCovers else { return message }
        return runner.hub.hops(of: covers).map { .reached(hops: $0, message) } ?? message
    }

    /// Applies the peer's batch in one transaction, within the session's writer allowance (and,
    /// `completingStream`, records its stream as complete in the same transaction).
    private mutating func apply(
        _ batch: DeltaBatch,
        sequence: UInt64,
        completingStream: Bool = false
    ) async -> [SessionMachine.Action] {
        let (store, runner) = (self.store, self.runner)
        let revoked = runner.revoked()
        let peer = runner.config.authenticatedPeer
        let incarnation = machine.peer?.writer ?? peer
        let allowance = runner.writers.perSession - outcome.newWriters
        let rejoinedAt = self.rejoinedAt
        let vouched = vouched(batch)
        let runs = runner.runCheck
        do {
            let (received, version, signed, batch) = try await io.write {
                // Checked before the store sees the batch, off the event loop (a signature
                // check and a digest a version); only the proofs that held are kept.
                let signed = runs.check(vouched)
                var batch = vouched
                batch.proofs = signed.held
                let received = try store.receive(
                    batch,
                    from: peer,
                    incarnation: incarnation,
                    wallMilliseconds: WallClock.milliseconds,
                    refuse: runner.refuse,
                    revoked: revoked,
                    writers: runner.writers,
                    allowance: allowance,
                    rejoinedAt: rejoinedAt,
                    completingStream: completingStream
                )
                return (received, received.version, signed, batch)
            }
            outcome.signedWrites.add(signed)
            outcome.signedWrites.refused += received.refusedUnsigned
            outcome.newWriters += received.newWriters
            outcome.unverifiedCovers += received.unverifiedCovers
            let keep = runner.hub.applied(
                covers: batch.covers,
                hops: receivedHops,
                changed: received.changed,
                held: version
            )
            if received.changed > 0 || completingStream {
                let hops = received.changed > 0 ? HopRecord.arrived(receivedHops) : nil
                runner.hub.notify(version: version, except: subscription, hops: hops)
            }
            if received.changed > 0 { await runner.observer.applied(received.changed) }
            return machine.handle(.applied(sequence: sequence, now: .now, changed: received.changed, keep: keep))
        } catch {
            return machine.handle(Self.event(refusing: error))
        }
    }

    /// What the machine is told when a batch could not be applied.
    private static func event(refusing error: any Error) -> SessionMachine.Event {
        switch error as? StoreError {
        case .tooManyWriters?:
            return .refused(ProtocolError(.rejectedChange, "\(error)"))
        case .tooManyNewWriters?, .rejoinedSince?:
            // The next session carries on where this one stopped, or from the snapshot.
            return .refused(ProtocolError(.busy, "\(error)"))
        default:
            return .storageFailed("applying a batch: \(error)")
        }
    }

    /// `batch` with what its covers claim of this replica's own writers cut to what its own
    /// signature or the batch's states vouch for: a made-up claim retires no writer
    /// (``OwnWitness``). The states are looked at only when the covers claim more than is vouched.
    private func vouched(_ batch: DeltaBatch) -> DeltaBatch {
        guard witness.vouchedPart(of: batch.covers) != batch.covers else { return batch }
        let covers = witness.vouchedPart(of: batch.covers, shown: witness.shown(in: batch))
        guard covers != batch.covers else { return batch }
        var cut = DeltaBatch(updates: batch.updates, covers: covers, base: batch.base)
        cut.proofs = batch.proofs
        return cut
    }

    /// Records the peer's complete stream: what its batches covered joins the version vector.
    private mutating func completeStream() async -> [SessionMachine.Action] {
        let (store, peer, rejoinedAt) = (self.store, runner.config.authenticatedPeer, self.rejoinedAt)
        do {
            let version = try await io.write {
                try store.completeStream(from: peer, rejoinedAt: rejoinedAt)
                return try store.versionVector()
            }
            runner.hub.notify(version: version, except: subscription)
            return []
        } catch let error as StoreError where error.isRejoinedSince {
            return machine.handle(.refused(ProtocolError(.busy, error.description)))
        } catch {
            return machine.handle(.storageFailed("recording a complete stream: \(error)"))
        }
    }

    /// Plans a delta for a peer known to hold `vv`: the actions to run at once (the announcement
    /// of its size), and those after the queue (a failure). Sessions asking for the same delta
    /// in one generation of the replica share one read of it (``DeltaStarts``).
    private mutating func startDelta(
        for vv: VersionVector,
        initial: Bool,
        deltaBase: VersionVector?
    ) async -> (first: [SessionMachine.Action], later: [SessionMachine.Action]) {
        let (store, io) = (self.store, self.io)
        // Read before anything else: the read may not predate a change this session has heard of.
        let generation = runner.hub.generation
        let request = DeltaStarts.Request(
            generation: generation,
            initial: initial,
            // A peer that can show progress is told how large the delta is (an index count, as
            // cheap as what it will send is small).
            announce: machine.peer.map { $0.version >= .fieldDeltas } ?? false,
            peer: vv,
            deltaBase: deltaBase
        )
        let read: @Sendable () async throws -> DeltaStarts.Start = {
            try await io.run { try Self.openDelta(request, store: store) }
        }
        do {
            // A session's first delta reads for itself: it also carries what this replica holds
            // beyond its vector (from streams still coming in), which a read made a moment
            // earlier may lack and no later delta sends; and a session's first read is seldom
            // another's.
            let start = initial ? try await read() : try await runner.hub.deltaStarts.start(request, read: read).start
            delta = start.stream
            readAhead = start.ahead
            return (machine.handle(.planned(fieldStates: start.size)), [])
        } catch {
            return ([], machine.handle(.storageFailed("reading the delta: \(error)")))
        }
    }

    /// A delta's opening read: the stream, its first batches (the machine asks for one next) and
    /// the size it announces.
    private static func openDelta(_ request: DeltaStarts.Request, store: any ReplicaStorage) throws -> DeltaStarts.Start
    {
        var stream = try store.deltaStream(
            for: request.peer,
            maxUpdates: WireLimits.maxUpdatesPerBatch,
            budgetBytes: WireLimits.batchBudgetBytes,
            unclaimed: request.initial,
            deltaBase: request.deltaBase
        )
        // What the peer holds beyond the plan's vector is not asked: the plan is the machine's
        // vector for the peer joined with its batches in flight, made in this same step, so it
        // holds all that is known (later batches pass what was learnt since).
        let ahead = try readBatches(&stream, peerHolds: VersionVector())
        // A delta read whole already (a live change's) is the size of what was read; only a
        // longer one is counted in the version index.
        let size =
            if !request.announce { 0 } else if ahead.last == .some(nil) {
                ahead.reduce(0) { $0 + ($1?.updates.count ?? 0) }
            } else { try stream.lacking(cap: 10_000_000) }
        return DeltaStarts.Start(stream: stream, size: size, ahead: ahead)
    }

    /// Reads the delta's next batch (nil when it is complete), unless it was read ahead; says
    /// whether it is the last.
    private mutating func produceBatch() async -> [SessionMachine.Action] {
        guard let current = delta else { return [] }
        if readAhead.isEmpty {
            let peerHolds = machine.peerVersionVector
            do {
                let (batches, advanced) = try await io.run { () throws -> ([DeltaBatch?], any DeltaSource) in
                    var stream = current
                    let batches = try Self.readBatches(&stream, peerHolds: peerHolds)
                    return (batches, stream)
                }
                delta = advanced
                readAhead = batches
            } catch {
                return machine.handle(.storageFailed("reading the delta: \(error)"))
            }
        }
        let batch = readAhead.removeFirst()
        let last = batch != nil && readAhead.first == .some(nil)
        if last { readAhead.removeFirst() }
        return machine.handle(.produced(batch, now: .now, last: last))
    }

    /// The stream's next batch, and, after a small one (a live change's), the one after it too
    /// (nil when there is none): what tells a delta's last batch, which then carries its `done`.
    /// A large batch is read alone, so a long stream holds no more in memory than before.
    private static func readBatches(_ stream: inout any DeltaSource, peerHolds: VersionVector) throws -> [DeltaBatch?] {
        guard let batch = try stream.next(peerHolds: peerHolds) else { return [nil] }
        guard batch.updates.count <= readAheadBelow else { return [batch] }
        return [batch, try stream.next(peerHolds: peerHolds)]
    }

    /// Up to this many field states a batch is small: the one after it is read at once.
    static let readAheadBelow = 64

    /// The replica's vector as of now (never the hub's, which a local edit precedes), for a
    /// pruned session's `have`.
    private mutating func readVersion() async -> [SessionMachine.Action] {
        let store = self.store
        do {
            let vv = try await io.run { try store.versionVector() }
            return machine.handle(.localChanged(localVersion: vv, now: .now))
        } catch {
            return machine.handle(.storageFailed("reading the version vector: \(error)"))
        }
    }

    /// Tells the peer this replica's version vector: the hub's (at worst behind the replica: the
    /// peer then sends what this side holds), else read.
    private mutating func sendSummary() async throws -> [SessionMachine.Action] {
        let store = self.store
        let vv: VersionVector
        if let known = runner.hub.knownVersion {
            vv = known
        } else {
            do { vv = try await io.run { try store.versionVector() } } catch {
                return machine.handle(.storageFailed("reading the version vector: \(error)"))
            }
        }
        try await send(.summary(versionVector: machine.asTold(vv)))
        return []
    }

    /// The peer said hello: a peer holding more of this replica's own writer than the replica is
    /// the witness of a rollback (the next local write starts a new writer), and progress it made
    /// as another incarnation will not be resumed.
    private mutating func peerReady(_ hello: Hello) async -> [SessionMachine.Action] {
        outcome.peer = hello
        let store = self.store
        witness.learn(hello, cluster: runner.config.clusterID)
        let claim = witness.vouchedPart(of: hello.versionVector)
        do {
            outcome.witnessedRollback = try await io.write { try store.noteWitness(claim) }
            try await io.write { try store.meet(hello.nodeID, incarnation: hello.writer) }
        } catch {
            return machine.handle(.storageFailed("recording the peer's hello: \(error)"))
        }
        if let refusal = await runner.observer.peerReady(hello) { return machine.handle(.refused(refusal)) }
        return []
    }

    /// Tells the observer the session's counters when they changed, and the observer and the
    /// hub what the peer was learnt to hold since (only that: passing the whole vector on made
    /// every report a pass over every writer of the cluster).
    private mutating func report() async {
        let moved = machine.takePeerMoved()
        let now = SessionObserver.Progress(
            counters: counters,
            waitedRoundTrips: machine.waitedRoundTrips,
            expecting: machine.incoming?.expected,
            receivedOfExpected: machine.incoming.map { machine.receivedUpdates - $0.receivedBefore } ?? 0,
            peerMoved: moved
        )
        if now != reported {
            reported = now
            await runner.observer.progress(now)
        }
        let resets = runner.hub.resets
        if resets != recordedResets {
            // The hub forgot what each peer holds (a rejoin): it learns the whole vector again.
            recordedResets = resets
            runner.hub.record(subscription, peerHolds: machine.peerVersionVector)
        } else if !moved.isEmpty {
            runner.hub.record(subscription, peerHolds: moved)
        }
    }
}
