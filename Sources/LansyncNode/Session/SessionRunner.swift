import AsyncAlgorithms
import Foundation
public import LansyncCore
public import LansyncStore
public import LansyncTransport
public import LansyncWire
import NIOCore

/// How a session ended.
public struct SessionOutcome: Sendable {
    public init(error: ProtocolError? = nil) { self.error = error }

    public var peer: Hello?
    /// The error this side reported, if any.
    public var error: ProtocolError?
    /// The error the peer reported, if any.
    public var peerError: ProtocolError?
    /// Set if the connection broke (rather than a protocol error).
    public var connectionError: String?
    /// True if the peer held more of this replica's own writer than the replica: it was rolled
    /// back (restored from a backup or snapshot), and has retired that writer.
    public var witnessedRollback = false
    /// True if both sides reached "up to date" at least once.
    public var reachedUpToDate = false
    /// What the peer was known to hold when both sides were last up to date (its hello, what it
    /// sent, what it acknowledged).
    public var peerHolds = VersionVector()
    public var sentUpdates = 0
    public var receivedUpdates = 0
    /// Bytes on the wire, TLS included.
    public var sentBytes = 0
    public var receivedBytes = 0
    /// Writers new to this replica that the peer's batches brought.
    public var newWriters = 0
    /// Entries of the peer's covers naming writers this replica could not verify, left out
    /// (``ReceivedBatch/unverifiedCovers``).
    public var unverifiedCovers = 0

    /// A one-line description of why the session ended, nil for a clean end.
    public var failure: String? {
        if let error { return error.description }
        if let peerError { return "peer reported " + peerError.description }
        return connectionError
    }

    /// True if retrying cannot help until someone changes something.
    public var isPermanent: Bool { (error ?? peerError)?.isPermanent ?? false }
}

/// Callbacks through which a running session reports to its node.
public struct SessionObserver: Sendable {
    public var peerReady: @Sendable (Hello) async -> Void = { _ in }
    public var upToDate: @Sendable (_ peerVersionVector: VersionVector) async -> Void = { _ in }
    public var progress: @Sendable (Progress) async -> Void = { _ in }
    /// A batch from the peer changed the replica: how many field states it changed.
    public var applied: @Sendable (_ changed: Int) async -> Void = { _ in }

    /// Counters of a session so far.
    public struct Progress: Sendable, Equatable {
        public var sentUpdates = 0
        public var receivedUpdates = 0
        public var sentBytes = 0
        public var receivedBytes = 0
        /// ``SessionMachine/waitedRoundTrips``.
        public var waitedRoundTrips = 0
        /// The peer's delta under way, when it announced its size: field states expected and
        /// received so far (``SessionMachine/incoming``).
        public var expecting: Int?
        public var receivedOfExpected = 0
        /// What the peer is known to hold (``SessionMachine/peerVersionVector``).
        public var peerVersionVector = VersionVector()
    }

    public init() {}
}

/// Executes a ``SessionMachine`` on an authenticated connection against the replica: the only
/// place where protocol logic meets sockets and SQLite.
public struct SessionRunner: Sendable {
    let store: ReplicaStore
    let io: BlockingIO
    let hub: ChangeHub
    let config: SessionMachine.SessionConfig
    let observer: SessionObserver
    /// The relay's limits, checked on every incoming field state.
    let refuse: ReplicaStore.Refusal?
    /// The writes revocations refuse, read for every batch (a revocation may arrive mid-session).
    let revoked: @Sendable () -> RevokedWriters
    /// What the peer's batches may add to the replica's writers.
    let writers: WriterBounds

    public init(
        store: ReplicaStore,
        io: BlockingIO,
        hub: ChangeHub,
        config: SessionMachine.SessionConfig,
        observer: SessionObserver = SessionObserver(),
        refuse: ReplicaStore.Refusal? = nil,
        revoked: @escaping @Sendable () -> RevokedWriters = { RevokedWriters() },
        writers: WriterBounds = .standard
    ) {
        self.writers = writers
        self.refuse = refuse
        self.revoked = revoked
        self.store = store
        self.io = io
        self.hub = hub
        self.config = config
        self.observer = observer
    }

    /// How often the machine's clock moves (timeouts, keepalives, its own anti-entropy round).
    /// Coarse on purpose: each tick wakes the session, and the node's anti-entropy at the finer
    /// interval (``ChangeHub/wakeLagging()``) wakes only sessions whose peer lacks something.
    static let tickInterval: Duration = .seconds(5)

    /// Events of the runner: the machine's, plus the end of the peer's stream.
    enum Input: Sendable {
        case event(SessionMachine.Event)
        case peerClosed
    }

    public func run(_ connection: PeerConnection) async -> SessionOutcome {
        var outcome = SessionOutcome()
        let (subscription, changes) = hub.subscribe()
        defer { hub.unsubscribe(subscription) }
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                var machine = SessionMachine(config: config)
                // However the session ends (cleanly, on an error, or closed under a write), the
                // outcome says what it moved: a batch applied just before a close still counts.
                defer {
                    outcome.sentUpdates = machine.sentUpdates
                    outcome.receivedUpdates = machine.receivedUpdates
                }
                var delta: DeltaStream?
                /// The current delta is known to be empty (``hub``'s vector): produce nothing.
                var emptyDelta = false
                let messages = inbound.map { incoming -> Input in
                    switch incoming {
                    case .message(let m): .event(.received(m, now: .now))
                    case .invalid(let e): .event(.receivedInvalid(e, now: .now))
                    }
                }
                let inputs = merge(
                    chain(messages, [Input.peerClosed].async),
                    AsyncTimerSequence.repeating(every: Self.tickInterval).map { [hub] _ in
                        Input.event(.tick(now: .now, localVersion: hub.knownVersion))
                    },
                    changes.map { Input.event(.localChanged) }
                )

                /// Performs actions (and those they lead to); returns true when the session is over.
                func perform(_ initial: [SessionMachine.Action]) async throws -> Bool {
                    var queue = initial[...]
                    while let action = queue.popFirst() {
                        switch action {
                        case .send(let message):
                            try await outbound.write(message)
                        case let .apply(sequence, batch):
                            let store = self.store
                            do {
                                let refuse = self.refuse
                                let revoked = self.revoked()
                                let peer = config.authenticatedPeer
                                let incarnation = machine.peer?.writer ?? peer
                                let writers = self.writers
                                let allowance = writers.perSession - outcome.newWriters
                                let (received, version) = try await io.run {
                                    let received = try store.receive(
                                        batch,
                                        from: peer,
                                        incarnation: incarnation,
                                        wallMilliseconds: WallClock.milliseconds,
                                        refuse: refuse,
                                        revoked: revoked,
                                        writers: writers,
                                        allowance: allowance
                                    )
                                    return (received, received.changed > 0 ? try store.versionVector() : nil)
                                }
                                let changed = received.changed
                                outcome.newWriters += received.newWriters
                                outcome.unverifiedCovers += received.unverifiedCovers
                                if changed > 0 {
                                    hub.notify(version: version, except: subscription)
                                    await observer.applied(changed)
                                }
                                queue += machine.handle(.applied(sequence: sequence, now: .now))
                            } catch let error as StoreError {
                                switch error {
                                case .tooManyWriters:
                                    queue += machine.handle(.refused(ProtocolError(.rejectedChange, error.description)))
                                case .tooManyNewWriters:
                                    // The next session carries on where this one stopped.
                                    queue += machine.handle(.refused(ProtocolError(.busy, error.description)))
                                default:
                                    queue += machine.handle(.storageFailed("applying a batch: \(error)"))
                                }
                            } catch {
                                queue += machine.handle(.storageFailed("applying a batch: \(error)"))
                            }
                        case .completeStream:
                            let store = self.store
                            let peer = config.authenticatedPeer
                            do {
                                let version = try await io.run {
                                    try store.completeStream(from: peer)
                                    return try store.versionVector()
                                }
                                hub.notify(version: version, except: subscription)
                            } catch {
                                queue += machine.handle(.storageFailed("recording a complete stream: \(error)"))
                            }
                        case let .startDelta(vv, initial, deltaBase):
                            // An anti-entropy round with a peer that holds everything: nothing to
                            // read (the hub's vector is never ahead of the replica, and a newer
                            // change announces itself and starts another delta).
                            if !initial, let known = hub.knownVersion, vv.covers(known) {
                                delta = nil
                                emptyDelta = true
                                continue
                            }
                            emptyDelta = false
                            let store = self.store
                            do {
                                // A peer that can show progress is told how large the delta is
                                // (an index count, as cheap as what it will send is small).
                                let announce = machine.peer.map { $0.version >= .fieldDeltas } ?? false
                                let (stream, size) = try await io.run {
                                    (
                                        try store.deltaStream(
                                            for: vv,
                                            maxUpdates: WireLimits.maxUpdatesPerBatch,
                                            budgetBytes: WireLimits.batchBudgetBytes,
                                            unclaimed: initial,
                                            deltaBase: deltaBase
                                        ),
                                        announce ? try store.lacking(vv, cap: 10_000_000) : 0
                                    )
                                }
                                delta = stream
                                // Before the batches the queue already asks for.
                                queue.insert(
                                    contentsOf: machine.handle(.planned(fieldStates: size)),
                                    at: queue.startIndex
                                )
                            } catch {
                                queue += machine.handle(.storageFailed("reading the delta: \(error)"))
                            }
                        case .produceBatch:
                            if emptyDelta {
                                emptyDelta = false
                                queue += machine.handle(.produced(nil, now: .now))
                                continue
                            }
                            guard let current = delta else { continue }
                            let peerHolds = machine.peerVersionVector
                            do {
                                let (batch, advanced) = try await io.run { () throws -> (DeltaBatch?, DeltaStream) in
                                    var s = current
                                    let b = try s.next(peerHolds: peerHolds)
                                    return (b, s)
                                }
                                delta = advanced
                                queue += machine.handle(.produced(batch, now: .now))
                            } catch {
                                queue += machine.handle(.storageFailed("reading the delta: \(error)"))
                            }
                        case .sendSummary:
                            let store = self.store
                            let vv: VersionVector
                            if let known = hub.knownVersion {
                                // At worst behind the replica: the peer then sends what we hold.
                                vv = known
                            } else {
                                do { vv = try await io.run { try store.versionVector() } } catch {
                                    queue += machine.handle(.storageFailed("reading the version vector: \(error)"))
                                    continue
                                }
                            }
                            try await outbound.write(.summary(versionVector: vv))
                        case .peerReady(let hello):
                            outcome.peer = hello
                            // A peer holding more of this replica's own writer than the replica is
                            // the witness of a rollback: the next local write starts a new writer.
                            let store = self.store
                            do {
                                outcome.witnessedRollback = try await io.run {
                                    try store.noteWitness(hello.versionVector)
                                }
                                // Progress the peer made as another incarnation will not be resumed.
                                try await io.run { try store.meet(hello.nodeID, incarnation: hello.writer) }
                            } catch {
                                queue += machine.handle(.storageFailed("recording the peer's hello: \(error)"))
                                continue
                            }
                            await observer.peerReady(hello)
                        case .upToDate:
                            outcome.reachedUpToDate = true
                            outcome.peerHolds = machine.peerVersionVector
                            await observer.upToDate(machine.peerVersionVector)
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

                let store = self.store
                let peer = config.authenticatedPeer
                let start: SessionMachine.Event
                do {
                    let (startVV, resume) = try await io.run {
                        (try store.versionVector(), try store.resume(from: peer))
                    }
                    start = .start(
                        versionVector: startVV,
                        resume: resume?.covers ?? VersionVector(),
                        resumeFor: resume?.incarnation,
                        now: .now
                    )
                } catch {
                    // Nothing was sent yet: the peer learns why from an error message.
                    _ = machine.handle(.start(versionVector: VersionVector(), now: .now))
                    _ = try await perform(machine.handle(.storageFailed("reading the replica: \(error)")))
                    return
                }
                if try await perform(machine.handle(start)) { return }
                var lastReported = SessionObserver.Progress()
                var recordedPeerVersion = VersionVector()
                for try await input in inputs {
                    switch input {
                    case .peerClosed:
                        if machine.phase != .closed { outcome.connectionError = "the peer closed the connection" }
                        return
                    case .event(let event):
                        if try await perform(machine.handle(event)) { return }
                    }
                    let now = SessionObserver.Progress(
                        sentUpdates: machine.sentUpdates,
                        receivedUpdates: machine.receivedUpdates,
                        sentBytes: connection.counters.sent,
                        receivedBytes: connection.counters.received,
                        waitedRoundTrips: machine.waitedRoundTrips,
                        expecting: machine.incoming?.expected,
                        receivedOfExpected: machine.incoming.map { machine.receivedUpdates - $0.receivedBefore } ?? 0,
                        peerVersionVector: machine.peerVersionVector
                    )
                    if now != lastReported {
                        lastReported = now
                        await observer.progress(now)
                    }
                    if machine.peerVersionVector != recordedPeerVersion {
                        recordedPeerVersion = machine.peerVersionVector
                        hub.record(subscription, peerHolds: recordedPeerVersion)
                    }
                }
            }
        } catch {
            if outcome.error == nil, outcome.peerError == nil {
                outcome.connectionError = "connection lost: \(TransportError.describing(error))"
            }
        }
        outcome.sentBytes = connection.counters.sent
        outcome.receivedBytes = connection.counters.received
        return outcome
    }
}
