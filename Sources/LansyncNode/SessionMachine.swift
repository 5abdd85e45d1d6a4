public import LansyncCore
public import LansyncWire

/// The logic of one sync session, as a pure state machine: events in, actions out. It owns no
/// socket, store or clock, so tests drive it with plain values; ``SessionRunner`` executes its
/// actions against a real connection and replica.
///
/// A session, after the TLS handshake:
/// 1. both sides send a hello; each checks the other's protocol version, cluster and identity;
/// 2. each side streams the delta the other's version vector lacks, at most ``SessionConfig/window``
///    batches unacknowledged, and ends it with `done`; the receiver applies each batch in one
///    transaction and acknowledges it, so an interrupted session resumes from what was applied;
/// 3. while connected, a local change starts a new delta at once (live push), and every
///    ``SessionConfig/antiEntropyInterval`` each side sends its version vector (`summary`), which
///    costs nothing more when the peer lacks nothing;
/// 4. timeouts close a session whose peer does not say hello, goes silent, or stops acknowledging.
public struct SessionMachine: Sendable {
    /// What the session needs to know about this node.
    public struct SessionConfig: Sendable {
        public var nodeID: NodeID
        public var clusterID: NodeID
        public var role: Hello.Role
        public var name: String
        /// The writer id this node issues its writes under (its incarnation, ``StreamResume``).
        public var writer: NodeID
        /// The peer's node id as its TLS certificate proves it; the hello must agree.
        public var authenticatedPeer: NodeID
        public var window = WireLimits.window
        public var antiEntropyInterval: Duration = .seconds(15)
        public var helloTimeout: Duration = .seconds(10)
        public var idleTimeout: Duration = .seconds(60)
        public var ackTimeout: Duration = .seconds(60)

        public init(nodeID: NodeID, clusterID: NodeID, role: Hello.Role, name: String, authenticatedPeer: NodeID, writer: NodeID? = nil) {
            self.nodeID = nodeID
            self.writer = writer ?? nodeID
            self.clusterID = clusterID
            self.role = role
            self.name = name
            self.authenticatedPeer = authenticatedPeer
        }
    }

    /// What happens to a session: the runner reports each to ``handle(_:)``.
    public enum Event: Sendable {
        /// The session begins; `versionVector` is the local replica's, `resume` how far the peer's
        /// last stream to it got and `resumeFor` the peer's incarnation then (``StreamResume``).
        case start(versionVector: VersionVector, resume: VersionVector = VersionVector(), resumeFor: NodeID? = nil, now: ContinuousClock.Instant)
        case received(Message, now: ContinuousClock.Instant)
        /// The bytes from the peer were not a valid message.
        case receivedInvalid(WireError, now: ContinuousClock.Instant)
        /// The runner applied an incoming batch (``Action/apply(sequence:_:)``).
        case applied(sequence: UInt64, now: ContinuousClock.Instant)
        /// The runner produced the next outgoing batch, or nil when the delta is complete.
        case produced(DeltaBatch?, now: ContinuousClock.Instant)
        /// The local replica changed (a local edit, or a batch from another peer).
        case localChanged
        /// Time passed (the runner ticks about once a second).
        case tick(now: ContinuousClock.Instant)
        /// Reading or writing the replica failed.
        case storageFailed(String)
    }

    /// What the machine asks its runner to do, in order.
    public enum Action: Sendable, Equatable {
        case send(Message)
        /// Apply this batch in one transaction, then report ``Event/applied(sequence:now:)``.
        case apply(sequence: UInt64, DeltaBatch)
        /// The peer's stream is complete (its `done` came after every batch was applied): count
        /// what its batches covered as held (``ReplicaStore/completeStream(from:)``).
        case completeStream
        /// Begin a delta for a peer known to hold `peerVersionVector`. The session's first delta
        /// (`initial`) also carries, uncovered, what this replica holds beyond its own vector; later
        /// ones do not, so an unfinished stream is not sent again on every change.
        case startDelta(peerVersionVector: VersionVector, initial: Bool)
        /// Produce the next batch of the current delta, then report ``Event/produced(_:now:)``.
        case produceBatch
        /// Send the local version vector as a `summary`.
        case sendSummary
        /// The peer said hello and checks passed.
        case peerReady(Hello)
        /// Both sides hold everything the other had when the session (or its last delta) began.
        case upToDate
        /// A one-shot session has exchanged everything both ways: close it cleanly.
        case finished
        /// Close the session; a non-nil error was ours to report (already sent to the peer when
        /// the connection allows), `peerError` the one the peer reported.
        case close(error: ProtocolError?, peerError: ProtocolError?)
    }

    /// Where the session stands: not started, waiting for the peer's hello, open, or over.
    public enum Phase: Sendable, Equatable { case idle, awaitingHello, open, closed }

    public let config: SessionConfig
    public private(set) var phase: Phase = .idle
    /// What this side knows the peer holds (its hello, then acknowledged batches and summaries).
    public private(set) var peerVersionVector = VersionVector()
    public private(set) var peer: Hello?
    /// Field states sent and received in this session.
    public private(set) var sentUpdates = 0
    public private(set) var receivedUpdates = 0
    /// Round trips the outgoing stream waited on: times it stood still with a full window until
    /// an acknowledgement came, counted once per window's worth of batches (the acks of batches
    /// sent in one round arrive together). A slow link adds this many round-trip times to the
    /// session, beyond the hello's one.
    public private(set) var waitedRoundTrips = 0
    private var roundBoundary: UInt64 = 0

    // Outgoing delta.
    private var streaming = false
    private var producing = false
    private var exhausted = false
    private var changedWhileStreaming = false
    private var sentInThisDelta = 0
    private var deltaIsInitial = true
    private var deltaStartVV = VersionVector()
    private var nextSequence: UInt64 = 1
    private var inFlight: [(sequence: UInt64, covers: VersionVector, sentAt: ContinuousClock.Instant)] = []
    private var initialDeltaDone = false
    // Incoming.
    private var expectedSequence: UInt64 = 1
    private var peerInitialDone = false
    // Timers.
    private var startedAt: ContinuousClock.Instant?
    private var lastReceived: ContinuousClock.Instant?
    private var lastSummary: ContinuousClock.Instant?

    public init(config: SessionConfig) {
        self.config = config
    }

    public mutating func handle(_ event: Event) -> [Action] {
        guard phase != .closed else { return [] }
        switch event {
        case let .start(vv, resume, resumeFor, now):
            guard phase == .idle else { return [] }
            phase = .awaitingHello
            startedAt = now
            lastReceived = now
            lastSummary = now
            return [.send(.hello(Hello(nodeID: config.nodeID, clusterID: config.clusterID, role: config.role, name: config.name, versionVector: vv,
                                       writer: config.writer, resume: resume, resumeFor: resumeFor)))]

        case let .received(message, now):
            lastReceived = now
            return receive(message, now: now)

        case let .receivedInvalid(error, _):
            return fail(error.protocolError)

        case let .applied(sequence, _):
            return [.send(.ack(sequence: sequence))]

        case let .produced(batch, now):
            producing = false
            guard let batch else {
                exhausted = true
                return finishDeltaIfComplete()
            }
            let sequence = nextSequence
            nextSequence += 1
            inFlight.append((sequence, batch.covers, now))
            sentUpdates += batch.updates.count
            sentInThisDelta += 1
            var actions: [Action] = [.send(.batch(sequence: sequence, batch))]
            if inFlight.count < config.window {
                producing = true
                actions.append(.produceBatch)
            }
            return actions

        case .localChanged:
            guard phase == .open else { return [] }
            if streaming {
                changedWhileStreaming = true
                return []
            }
            return beginDelta(initial: false)

        case let .tick(now):
            return tick(now)

        case let .storageFailed(why):
            return fail(ProtocolError(.storage, why))
        }
    }

    private mutating func receive(_ message: Message, now: ContinuousClock.Instant) -> [Action] {
        switch (phase, message) {
        case (.awaitingHello, .hello(let hello)):
            if let refusal = check(hello) { return fail(refusal) }
            peer = hello
            // Resume the peer's interrupted stream from us only if we are still the incarnation
            // that sent it; the peer drops it otherwise (``StreamResume``).
            peerVersionVector = StreamResume.start(receiver: hello.versionVector, resume: hello.resume, resumeFor: hello.resumeFor,
                                                   senderWriter: config.writer)
            phase = .open
            return [.peerReady(hello)] + beginDelta(initial: true)

        case (.open, let .batch(sequence, batch)):
            guard sequence == expectedSequence else {
                return fail(ProtocolError(.unexpectedMessage, "batch \(sequence) arrived, expected \(expectedSequence)"))
            }
            expectedSequence += 1
            receivedUpdates += batch.updates.count
            return [.apply(sequence: sequence, batch)]

        case (.open, .ack(let sequence)):
            let windowWasFull = inFlight.count >= config.window
            var acknowledged = false
            while let first = inFlight.first, first.sequence <= sequence {
                peerVersionVector.join(first.covers)
                inFlight.removeFirst()
                acknowledged = true
            }
            guard acknowledged else { return fail(ProtocolError(.unexpectedMessage, "ack of \(sequence), which was not sent")) }
            var actions: [Action] = []
            if streaming, !exhausted, !producing, inFlight.count < config.window {
                if windowWasFull, sequence >= roundBoundary {
                    waitedRoundTrips += 1
                    roundBoundary = nextSequence
                }
                producing = true
                actions.append(.produceBatch)
            }
            actions += finishDeltaIfComplete()
            if !streaming, inFlight.isEmpty { actions += checkUpToDate() }
            return actions

        case (.open, .done):
            peerInitialDone = true
            return [.completeStream] + checkUpToDate()

        case (.open, .summary(let vv)):
            peerVersionVector.join(vv)
            // Send what the peer lacks; a delta that finds nothing sends nothing.
            return streaming ? [] : beginDelta(initial: false)

        case (_, .error(let error)):
            phase = .closed
            return [.close(error: nil, peerError: error)]

        default:
            return fail(ProtocolError(.unexpectedMessage, "unexpected \(message.kind) while \(phase)"))
        }
    }

    private func check(_ hello: Hello) -> ProtocolError? {
        if hello.version.major != ProtocolVersion.current.major {
            return ProtocolError(.protocolVersion, "peer speaks protocol \(hello.version), this node \(ProtocolVersion.current): upgrade the older node")
        }
        if hello.clusterID != config.clusterID {
            return ProtocolError(.wrongCluster, "peer belongs to cluster \(hello.clusterID.short), this node to \(config.clusterID.short)")
        }
        if hello.nodeID != config.authenticatedPeer {
            return ProtocolError(.identityMismatch, "hello claims node \(hello.nodeID.short) but the certificate proves \(config.authenticatedPeer.short)")
        }
        if hello.nodeID == config.nodeID {
            return ProtocolError(.duplicateNodeID, "peer has this node's own id \(hello.nodeID.short): a copied data directory, or a node connected to itself")
        }
        return nil
    }

    private mutating func beginDelta(initial: Bool) -> [Action] {
        streaming = true
        exhausted = false
        changedWhileStreaming = false
        sentInThisDelta = 0
        deltaIsInitial = initial
        var planned = peerVersionVector
        for batch in inFlight { planned.join(batch.covers) }
        deltaStartVV = planned
        guard inFlight.count < config.window else { return [.startDelta(peerVersionVector: planned, initial: initial)] }
        producing = true
        return [.startDelta(peerVersionVector: planned, initial: initial), .produceBatch]
    }

    /// Ends the outgoing delta once it is exhausted and acknowledged.
    private mutating func finishDeltaIfComplete() -> [Action] {
        guard streaming, exhausted, !producing else { return [] }
        var actions: [Action] = []
        if deltaIsInitial || sentInThisDelta > 0 {
            // The receiver learns it is up to date with us; an empty anti-entropy answer stays silent.
            actions.append(.send(.done(versionVector: deltaStartVV)))
        }
        streaming = false
        if deltaIsInitial { initialDeltaDone = true }
        if changedWhileStreaming { actions += beginDelta(initial: false) }
        return actions + checkUpToDate()
    }

    /// Reports "up to date" once both initial deltas are through, and again after every later
    /// delta in either direction completes (a one-shot session then finishes).
    private mutating func checkUpToDate() -> [Action] {
        guard initialDeltaDone, peerInitialDone, inFlight.isEmpty, !streaming else { return [] }
        if config.role == .oneShot {
            phase = .closed
            return [.upToDate, .finished]
        }
        return [.upToDate]
    }

    private mutating func tick(_ now: ContinuousClock.Instant) -> [Action] {
        if phase == .awaitingHello, let startedAt, now - startedAt > config.helloTimeout {
            return fail(ProtocolError(.timeout, "no hello within \(config.helloTimeout)"))
        }
        if let lastReceived, now - lastReceived > config.idleTimeout {
            return fail(ProtocolError(.timeout, "peer silent for \(config.idleTimeout)"))
        }
        if let oldest = inFlight.first, now - oldest.sentAt > config.ackTimeout {
            return fail(ProtocolError(.timeout, "batch \(oldest.sequence) unacknowledged for \(config.ackTimeout)"))
        }
        if phase == .open, let lastSummary, now - lastSummary >= config.antiEntropyInterval {
            self.lastSummary = now
            return [.sendSummary]
        }
        return []
    }

    private mutating func fail(_ error: ProtocolError) -> [Action] {
        phase = .closed
        return [.send(.error(error)), .close(error: error, peerError: nil)]
    }
}

extension Message {
    /// The message's kind, for diagnostics.
    public var kind: String {
        switch self {
        case .hello: "hello"
        case .batch: "batch"
        case .ack: "ack"
        case .done: "done"
        case .summary: "summary"
        case .error: "error"
        }
    }
}
