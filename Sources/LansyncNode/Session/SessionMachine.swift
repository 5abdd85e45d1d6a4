public import LansyncCore
import LansyncReplica
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
/// 3. while connected, a local change starts a new delta at once (live push); every
///    ``SessionConfig/antiEntropyInterval`` each side checks, with no message, that the peer is
///    known to hold everything it has (else it sends the delta a push missed), and tells the
///    peer its version vector (`summary`) when that changed since it last did, or when it has
///    said nothing for a third of the idle timeout (a keepalive that also lets the peer repair
///    what it missed): an idle round costs no bytes and no replica read;
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
        /// The cluster statements this node holds, sent in its hello (protocol 1.3).
        public var statements: [[UInt8]] = []
        /// What this node knows of other members' progress, gossiped in its hello (protocol 1.4).
        public var reports: [Hello.Report] = []
        /// Members' own signed reports, this node's first (protocol 1.13, ``Hello/signedReports``).
        public var signedReports: [Hello.SignedReport] = []
        /// When this node last rejoined from a snapshot (protocol 1.5; 0 if never).
        public var rejoinedAt: UInt64 = 0
        /// ``Hello/awaySince``: nonzero while this node refuses no one's state.
        public var awaySince: UInt64 = 0
        /// ``Hello/staleSince``: nonzero while no replica may rejoin from this one.
        public var staleSince: UInt64 = 0
        /// ``Hello/clock``: this node's wall clock as the session starts (Unix ms).
        public var clock: UInt64 = 0
        /// ``Hello/listenPort``: where this node accepts peers (0 for a one-shot sync).
        public var listenPort: UInt64 = 0
        /// ``Hello/addresses``: where this node last reached other members.
        public var addresses: [Hello.Address] = []
        /// ``Hello/viewSessions``: the sessions of this node's active view as it says hello.
        public var viewSessions: UInt64 = 0
        /// ``Hello/outsideView``: this session is a round of anti-entropy outside the views.
        public var outsideView = false
        /// ``Hello/members``: about how many members this node has heard of (protocol 1.11).
        public var members: MemberSketch?
        /// How long a change a pruned peer announced (`have`) may take to arrive through other
        /// sessions before this side asks the peer for it (`graft`).
        public var graftDelay: Duration = .milliseconds(50)
        /// A change a pruned peer announced at least this long before it arrived through another
        /// session: that peer is the shorter way, and is asked to send at once again (`graft`);
        /// the slower one is pruned when its copy next arrives second (Plumtree's optimization).
        ///
        /// Plumtree compares hop counts; a time says less. At 10 ms, the ordinary spread of a
        /// hop's latency set it off again and again: each swap cost a duplicate, and the tree
        /// never settled (simulated 200 and 1,000 nodes: 1.7 duplicates per node and change
        /// against 0.55 with the swap off). One second swaps only a path that is slow indeed.
        public var graftAhead: Duration = .seconds(1)
        /// The most writers a version vector from the peer may name (its hello, summaries, `done`,
        /// and what its batches cover, joined): a peer past it is refused, so what this side keeps
        /// of the peer stays bounded whatever it claims (``WriterBounds/total``).
        public var maxWriters = WriterBounds.standard.total

        public init(
            nodeID: NodeID,
            clusterID: NodeID,
            role: Hello.Role,
            name: String,
            authenticatedPeer: NodeID,
            writer: NodeID? = nil
        ) {
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
        /// last stream to it got and `resumeFor` the peer's incarnation then (``StreamResume``);
        /// `folded` the writers the replica folded, read with its vector (``WriterFolding``).
        case start(
            versionVector: VersionVector,
            resume: VersionVector = VersionVector(),
            resumeFor: NodeID? = nil,
            folded: VersionVector = VersionVector(),
            now: ContinuousClock.Instant
        )
        case received(Message, now: ContinuousClock.Instant)
        /// The bytes from the peer were not a valid message.
        case receivedInvalid(WireError, now: ContinuousClock.Instant)
        /// The runner applied an incoming batch (``Action/apply(sequence:_:)``); `changed`: how
        /// many field states it changed (0: the replica held all of it already).
        /// `keep`: the node's ``HopRecord`` found it a copy the flood near a change's origin was
        /// expected to bring, so the session stays eager even if it changed nothing.
        case applied(sequence: UInt64, now: ContinuousClock.Instant, changed: Int = 1, keep: Bool = false)
        /// The runner planned the delta it was asked for: about `fieldStates` to send.
        case planned(fieldStates: Int)
        /// The runner produced the next outgoing batch, or nil when the delta is complete; `last`
        /// when it read ahead and found nothing after this batch (its `done` goes with it).
        case produced(DeltaBatch?, now: ContinuousClock.Instant, last: Bool = false)
        /// The local replica changed (a local edit, or a batch from another peer); `localVersion`
        /// is its version vector as last read (never ahead of it), nil if unknown.
        /// `eager`: the change is near where it was made (``HopRecord/floods(_:)``), so it goes
        /// at once even over a pruned session.
        case localChanged(localVersion: VersionVector?, now: ContinuousClock.Instant? = nil, eager: Bool = false)
        /// Time passed (the runner ticks every few seconds); `localVersion` is the replica's
        /// version vector as last read (never ahead of it), nil if unknown.
        case tick(now: ContinuousClock.Instant, localVersion: VersionVector? = nil)
        /// Reading or writing the replica failed.
        case storageFailed(String)
        /// The runner refused the peer's batch (it named more writers than this replica takes).
        case refused(ProtocolError)
    }

    /// What the machine asks its runner to do, in order.
    public enum Action: Sendable, Equatable {
        case send(Message)
        /// Apply this batch in one transaction, then report ``Event/applied(sequence:now:)``.
        case apply(sequence: UInt64, DeltaBatch)
        /// Apply this batch, the last of the peer's stream, and complete the stream (as
        /// ``completeStream`` does), in one transaction; then report ``Event/applied(sequence:now:)``.
        case applyFinal(sequence: UInt64, DeltaBatch)
        /// The peer's stream is complete (its `done` came after every batch was applied): count
        /// what its batches covered as held (``ReplicaStorage/completeStream(from:rejoinedAt:)``).
        case completeStream
        /// Begin a delta for a peer known to hold `peerVersionVector`. The session's first delta
        /// (`initial`) also carries, uncovered, what this replica holds beyond its own vector; later
        /// ones do not, so an unfinished stream is not sent again on every change. With a
        /// `deltaBase` (a peer of protocol 1.2), fields travel as field deltas against it.
        case startDelta(peerVersionVector: VersionVector, initial: Bool, deltaBase: VersionVector?)
        /// Produce the next batch of the current delta, then report ``Event/produced(_:now:)``.
        case produceBatch
        /// Send the local version vector as a `summary`.
        case sendSummary
        /// Read the replica's version vector and report it as ``Event/localChanged(localVersion:now:)``:
        /// a pruned session was told of a local edit before its vector was read, and its `have`
        /// must say what moved.
        case readVersion
        /// Report a ``Event/tick(now:localVersion:)`` after `after` (a `have`'s wait for a graft).
        case wake(after: Duration)
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

    /// The session's state: each case carries only what makes sense in it.
    enum State: Sendable {
        case idle
        case awaitingHello(since: ContinuousClock.Instant)
        case open(Open)
        case closed
    }

    /// An open session: both deltas' progress, the batches in flight, the incoming sequence.
    struct Open: Sendable {
        /// The outgoing delta, if one is being streamed.
        var outgoing: Delta?
        var inFlight: [(sequence: UInt64, covers: VersionVector, sentAt: ContinuousClock.Instant)] = []
        var nextSequence: UInt64 = 1
        var expectedSequence: UInt64 = 1
        var initialDeltaDone = false
        var peerInitialDone = false
        var lastSummary: ContinuousClock.Instant
        /// The sequence whose acknowledgement ends the current round of waiting (``waitedRoundTrips``).
        var roundBoundary: UInt64 = 0
        /// How this side passes changes on to the peer (Docs/SCALE.md, "Spread").
        var spread = Spread.eager
        /// What this side's `have`s told the peer it holds.
        var announced = VersionVector()
        /// What the peer's `have`s announced that the replica lacked, and since when: asked for
        /// (`graft`) if still lacking after ``SessionConfig/graftDelay``.
        var missing: (entries: VersionVector, since: ContinuousClock.Instant)?
    }

    /// How an open session passes changes on (Plumtree's eager and lazy links): at once as
    /// batches, or as `have`s the peer asks for (`graft`) if no other session brings them.
    enum Spread: Sendable, Equatable {
        /// Every change at once.
        case eager
        /// As `have`s: the peer pruned this session.
        case lazyForPeer
        /// As `have`s: this side pruned it (a live change came that it already held), and asks
        /// no more until it grafts.
        case pruned
        /// At once again: this side pruned, then the peer grafted; this side does not prune a
        /// second time until it grafts itself.
        case regraftedByPeer

        /// Changes go to the peer as `have`s.
        var isLazy: Bool { self == .lazyForPeer || self == .pruned }
        /// This side may ask the peer to prune.
        var mayPrune: Bool { self == .eager || self == .lazyForPeer }

        /// The peer asked this side to prune.
        mutating func peerPruned() {
            switch self {
            case .eager: self = .lazyForPeer
            case .regraftedByPeer: self = .pruned
            case .lazyForPeer, .pruned: break
            }
        }

        /// The peer asked for changes at once again.
        mutating func peerGrafted() {
            switch self {
            case .lazyForPeer: self = .eager
            case .pruned: self = .regraftedByPeer
            case .eager, .regraftedByPeer: break
            }
        }
    }

    /// An outgoing delta being streamed.
    struct Delta: Sendable {
        /// Where reading the delta's batches stands.
        enum Reading: Sendable, Equatable {
            /// More to read, once the window has room.
            case waiting
            /// A batch is being read (``Action/produceBatch``).
            case producing
            /// Nothing more to read. `doneSent`: its `done` went with its last batch
            /// (``Message/finalBatch(sequence:_:done:)``).
            case exhausted(doneSent: Bool)
        }

        /// The first delta of the session: it also carries unclaimed states, and always ends with `done`.
        let isInitial: Bool
        /// What the peer was known to hold when the delta began: its `done` says so.
        let startVersionVector: VersionVector
        var reading = Reading.waiting
        var changedWhileStreaming = false
        var sentBatches = 0
        /// What the delta's batches covered: the peer holds it whole once it has the `done`.
        var covered = VersionVector()
    }

    public let config: SessionConfig
    private var state: State = .idle
    /// Whether a batch from the peer now would be part of its first delta: a catch-up, not a
    /// change passed on live (a change it brings is new where it lands: ``HopRecord``).
    public var peerCatchingUp: Bool {
        if case .open(let open) = state { !open.peerInitialDone } else { false }
    }
    public var phase: Phase {
        switch state {
        case .idle: .idle
        case .awaitingHello: .awaitingHello
        case .open: .open
        case .closed: .closed
        }
    }
    /// What this side knows the peer holds (its hello, then acknowledged batches and summaries).
    public private(set) var peerVersionVector = VersionVector()
    /// What this side learnt the peer holds since ``takePeerMoved()`` last took it: the runner
    /// passes on what moved, not the whole vector (a relay's members each hold every writer of
    /// the cluster, and a pass over all of them per batch was most of its time).
    public private(set) var peerMoved = VersionVector()
    /// What the peer is known to have seen *whole*: every write to every field up to this vector
    /// (its hello's vector, its summaries, what its own batches covered, and our deltas it has
    /// completed). Field deltas are taken against it; unlike ``peerVersionVector`` it never
    /// counts part of a stream, whose fields' newer states may still be on their way. Nil for a
    /// peer older than protocol 1.2, which takes whole states only.
    public private(set) var deltaBase: VersionVector?
    public private(set) var peer: Hello?
    /// Field states sent and received in this session (the runner adds the bytes).
    public private(set) var counters = SessionCounters()
    public var sentUpdates: Int { counters.sentUpdates }
    public var receivedUpdates: Int { counters.receivedUpdates }
    /// What the runner's readings of the local replica's version vector (with ticks and changes)
    /// say it holds; nil before any: a later delta to a peer known to hold it all has nothing to
    /// send.
    ///
    /// A tick's reading is joined, never taken instead: the runner's inputs come from several
    /// streams, each read when it fired, so a tick read before a change may be handled after it;
    /// the replica only grows, so every reading is a lower bound and their join is too.
    private var localVersion: VersionVector?
    /// A change was announced without its vector (``Event/localChanged(localVersion:now:eager:)``
    /// with nil, a local edit) and no delta has read the replica since: until one does, no later
    /// reading may tell that the peer holds it all (a reading can predate the change).
    private var unreadChange = false
    /// The peer's delta under way, when it said how large it is (`expect`): about how many field
    /// states it sends, and ``receivedUpdates`` when it said so. Nil between deltas.
    public private(set) var incoming: (expected: Int, receivedBefore: Int)?
    /// A delta at least this large is announced to the peer (`expect`), so it can show progress;
    /// a smaller one is over before progress would matter, and costs no extra frame.
    public static let announcedDelta = 1_000
    /// Round trips the outgoing stream waited on: times it stood still with a full window until
    /// an acknowledgement came, counted once per window's worth of batches (the acks of batches
    /// sent in one round arrive together). A slow link adds this many round-trip times to the
    /// session, beyond the hello's one.
    public private(set) var waitedRoundTrips = 0
    /// When the peer last sent anything (the idle timeout runs in every phase).
    private var lastReceived: ContinuousClock.Instant?
    /// The version vector this side last told the peer (hello or summary), and when.
    private var told: (versionVector: VersionVector?, at: ContinuousClock.Instant)?
    /// The writers this side's hello said it folded: every vector it tells in this session
    /// leaves them out (a fold taken later waits for the next session).
    private var folded = VersionVector()

    public init(config: SessionConfig) {
        self.config = config
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.closed, _):
            return []

        case let (.idle, .start(vv, resume, resumeFor, folded, now)):
            return start(versionVector: vv, resume: resume, resumeFor: resumeFor, folded: folded, now: now)
        case (_, .start):
            return []

        case let (_, .received(message, now)):
            lastReceived = now
            return receive(message, now: now)

        case let (_, .receivedInvalid(error, _)):
            return fail(error.protocolError)

        case (.open, .planned(let fieldStates)):
            guard fieldStates >= Self.announcedDelta, let peer, peer.version >= .fieldDeltas else { return [] }
            return [.send(.expect(fieldStates: UInt64(fieldStates)))]

        case (.open(var open), .applied(let sequence, _, let changed, let keep)):
            let actions = applied(sequence, changed: keep ? 1 : changed, &open)
            return settle(open, actions)

        case (.open(var open), .produced(let batch, let now, let last)):
            if let batch, let peer, peer.version < .unsets, batch.needsProtocol16 {
                // An older node cannot read a removal or a link; it must not be sent a state
                // without it.
                return fail(
                    ProtocolError(
                        .protocolVersion,
                        "the peer speaks protocol \(peer.version), and a field removed with 'lansync unset' or a link to an item needs \(ProtocolVersion.unsets): upgrade lansync on it"
                    )
                )
            }
            let actions = produced(batch, now: now, last: last, &open)
            return settle(open, actions)

        case let (_, .localChanged(version, now, eager)):
            return localChanged(version, now: now, eager: eager)

        // Results of actions of a state the session has left.
        case (_, .applied), (_, .produced), (_, .planned):
            return []

        case let (_, .tick(now, version)):
            learn(version)
            return tick(now, localVersion: version)

        case let (_, .storageFailed(why)):
            return fail(ProtocolError(.storage, why))

        case let (_, .refused(error)):
            return fail(error)
        }
    }

    /// Says hello with this replica's version vector and where the peer's last stream to it got,
    /// both without the writers it folded (``WriterFolding``), as are the reports it gossips.
    private mutating func start(
        versionVector vv: VersionVector,
        resume: VersionVector,
        resumeFor: NodeID?,
        folded: VersionVector,
        now: ContinuousClock.Instant
    ) -> [Action] {
        state = .awaitingHello(since: now)
        lastReceived = now
        told = (vv, now)
        self.folded = folded
        var hello = Hello(
            nodeID: config.nodeID,
            clusterID: config.clusterID,
            role: config.role,
            name: config.name,
            versionVector: vv.folded(by: folded),
            writer: config.writer,
            resume: resume.folded(by: folded),
            resumeFor: resumeFor,
            statements: config.statements
        )
        hello.folded = folded
        // A report is told without the folded writers only when the member had seen all of
        // them: joining them back is then exact, never more than it had seen.
        hello.reports = config.reports.map { report in
            guard !folded.isEmpty, report.seen.covers(folded) else { return report }
            return Hello.Report(
                nodeID: report.nodeID,
                at: report.at,
                seen: report.seen.folded(by: folded),
                toldFolded: true
            )
        }
        hello.signedReports = config.signedReports
        hello.rejoinedAt = config.rejoinedAt
        hello.awaySince = config.awaySince
        hello.staleSince = config.staleSince
        hello.clock = config.clock
        hello.listenPort = config.listenPort
        hello.addresses = config.addresses
        hello.viewSessions = config.viewSessions
        hello.outsideView = config.outsideView
        hello.members = config.members
        return [.send(.hello(hello))]
    }

    /// The replica changed: a delta begins at once, or after the one being streamed. (Before the
    /// session opened, the first delta reads the replica anyway.)
    private mutating func localChanged(
        _ version: VersionVector?,
        now: ContinuousClock.Instant?,
        eager: Bool = false
    ) -> [Action] {
        // Taken as it is: a change's reading is made after the change was announced, so a later
        // change this reading predates announces itself again. (Joining every reading cost a
        // relay's sessions a pass over every writer per change.)
        if let version { localVersion = version } else { unreadChange = true }
        guard case .open(var open) = state else { return [] }
        var graft: [Action] = []
        if let missing = open.missing, let version, version.covers(missing.entries) {
            open.missing = nil
            // It came another way, later than this peer said it had it: this peer is nearer.
            if let now, now - missing.since >= config.graftAhead {
                open.spread = .eager
                graft = [.send(.graft)]
            }
        }
        if open.spread.isLazy, !eager || !speaksHops {
            // A local edit is announced before its vector is read (``ChangeHub/notifyUnread()``).
            guard let version else { return settle(open, graft + [.readVersion]) }
            // Passed on lazily, this replica's own changes as much as forwarded ones (Plumtree
            // sends its own broadcasts lazily on pruned links too: sent at once on every link,
            // they reached each peer twice, once directly and once down the tree, and every
            // second copy pruned one more link until the tree was gone): the peer hears what this
            // replica now holds, and asks for it if its other sessions do not bring it.
            let known = open.announced.joined(with: peerVersionVector)
            let moved = VersionVector(version.counters.filter { $0.value > known[$0.key] })
            open.announced.join(version)
            return settle(open, graft + (moved.isEmpty ? [] : [.send(.have(versionVector: asTold(moved)))]))
        }
        guard open.outgoing != nil else {
            let actions = beginDelta(initial: false, &open)
            return settle(open, graft + actions)
        }
        open.outgoing?.changedWhileStreaming = true
        return settle(open, graft)
    }

    /// Joins a tick's reading of the replica's vector into ``localVersion`` (nil: none was read).
    private mutating func learn(_ version: VersionVector?) {
        guard let version else { return }
        localVersion = localVersion.map { $0.joined(with: version) } ?? version
    }

    /// Stores the open state back, unless the actions close the session.
    private mutating func settle(_ open: Open, _ actions: [Action]) -> [Action] {
        let closes = actions.contains {
            switch $0 {
            case .close, .finished: true
            default: false
            }
        }
        state = closes ? .closed : .open(open)
        return actions
    }

    private mutating func receive(_ message: Message, now: ContinuousClock.Instant) -> [Action] {
        // The hops are the node's (``HopRecord``): the message is the same without them.
        if case .reached(_, let inner) = message { return receive(inner, now: now) }
        switch (state, message) {
        case (.awaitingHello, .hello(let hello)):
            return receiveHello(hello, now: now)

        case (.open(var open), let .batch(sequence, batch)):
            if let refusal = accept(sequence, batch, &open) { return fail(refusal) }
            return settle(open, [.apply(sequence: sequence, batch)])

        case (.open(var open), .ack(let sequence)):
            return receiveAck(sequence, &open)

        case (.open(let open), .expect(let count)):
            incoming = (Int(clamping: count), receivedUpdates)
            return settle(open, [])

        case (.open(var open), .done(let vv)):
            if let refusal = tooManyWriters(vv, "its done") { return fail(refusal) }
            open.peerInitialDone = true
            incoming = nil
            let actions = [.completeStream] + checkUpToDate(open)
            return settle(open, actions)

        case (.open(var open), let .finalBatch(sequence, batch, vv)):
            // A batch and the `done` after it: the same checks, one transaction.
            if let refusal = accept(sequence, batch, &open) ?? tooManyWriters(vv, "its done") { return fail(refusal) }
            open.peerInitialDone = true
            incoming = nil
            return settle(open, [.applyFinal(sequence: sequence, batch)] + checkUpToDate(open))

        case (.open(var open), .summary(let sent)):
            let vv = sent.unfolded(with: peer?.folded ?? VersionVector())
            learnPeerHolds(vv)
            deltaBase?.join(vv)
            if let refusal = tooManyWriters(peerVersionVector, "its summary") { return fail(refusal) }
            // Send what the peer lacks; a delta that finds nothing sends nothing.
            let actions = open.outgoing != nil ? [] : beginDelta(initial: false, &open)
            return settle(open, actions)

        case (.open(let open), .report):
            // The peer's own signed report: the driver passes it to the node, which keeps it.
            return settle(open, [])

        case (.open(var open), .have), (.open(var open), .prune), (.open(var open), .graft):
            let actions = receiveLazyPush(message, now: now, &open)
            return settle(open, actions)

        case (_, .error(let error)):
            state = .closed
            return [.close(error: nil, peerError: error)]

        default:
            return fail(ProtocolError(.unexpectedMessage, "unexpected \(message.kind) while \(phase)"))
        }
    }

    /// Lazy push (protocol 1.10, Docs/SCALE.md "Spread"): a `have` (the peer holds it; if this
    /// replica lacks it, a wait for it to come another way), a `prune`, a `graft`.
    private mutating func receiveLazyPush(
        _ message: Message,
        now: ContinuousClock.Instant,
        _ open: inout Open
    ) -> [Action] {
        switch message {
        case .have(let sent):
            let vv = sent.unfolded(with: peer?.folded ?? VersionVector())
            learnPeerHolds(vv)
            deltaBase?.join(vv)
            if let refusal = tooManyWriters(peerVersionVector, "its have") { return fail(refusal) }
            if let localVersion, localVersion.covers(vv) { return [] }
            guard var missing = open.missing else {
                open.missing = (vv, now)
                return [.wake(after: config.graftDelay)]
            }
            missing.entries.join(vv)
            open.missing = missing
            return []
        case .prune:
            open.spread.peerPruned()
            return []
        case .graft:
            // What it lacks follows in its summary.
            open.spread.peerGrafted()
            return []
        default:
            return []
        }
    }

    /// A batch applied: acknowledged, and if it was a live change this replica already held,
    /// the peer is told to pass such changes on lazily from now on (a peer's first delta may
    /// repeat what others brought; that says nothing).
    private mutating func applied(_ sequence: UInt64, changed: Int, _ open: inout Open) -> [Action] {
        var actions: [Action] = [.send(.ack(sequence: sequence))]
        if changed == 0, open.peerInitialDone, open.spread.mayPrune, speaksViews {
            // Both ways, as Plumtree prunes: a link off the tree carries `have`s each way.
            open.spread = .pruned
            actions.append(.send(.prune))
        }
        return actions
    }

    /// Takes in a batch from the peer before it is applied: its sequence must be the next, and
    /// what it covers joins what the peer is known to hold; a refusal if either check fails.
    private mutating func accept(_ sequence: UInt64, _ batch: DeltaBatch, _ open: inout Open) -> ProtocolError? {
        guard sequence == open.expectedSequence else {
            return ProtocolError(.unexpectedMessage, "batch \(sequence) arrived, expected \(open.expectedSequence)")
        }
        open.expectedSequence += 1
        counters.receivedUpdates += batch.updates.count
        // The peer holds what its stream covers: a later delta to it never sends that back
        // (no echo of a change to where it came from).
        learnPeerHolds(batch.covers)
        deltaBase?.join(batch.covers)
        return tooManyWriters(peerVersionVector, "what its stream covers")
    }

    /// The peer's hello: checked, then the session opens and the first delta begins. From here
    /// on the hello is read whole (``Hello/unfolded()``): the machine, and the node it reports
    /// to, see every writer the peer's vectors hold.
    private mutating func receiveHello(_ told: Hello, now: ContinuousClock.Instant) -> [Action] {
        if let refusal = check(told) { return fail(refusal) }
        let hello = told.unfolded()
        if let refusal = tooManyWriters(hello.versionVector, "its hello with the writers it folded") {
            return fail(refusal)
        }
        peer = hello
        deltaBase = hello.version >= .fieldDeltas ? hello.versionVector : nil
        // Resume the peer's interrupted stream from us only if we are still the incarnation that
        // sent it; the peer drops it otherwise (``StreamResume``).
        peerVersionVector = StreamResume.start(
            receiver: hello.versionVector,
            resume: hello.resume,
            resumeFor: hello.resumeFor,
            senderWriter: config.writer
        )
        peerMoved = peerVersionVector
        var open = Open(lastSummary: now)
        let actions = [.peerReady(hello)] + beginDelta(initial: true, &open)
        return settle(open, actions)
    }

    /// The peer acknowledged batches up to `sequence`: the window opens for the next batch, and
    /// the delta ends once all of it is acknowledged.
    private mutating func receiveAck(_ sequence: UInt64, _ open: inout Open) -> [Action] {
        let windowWasFull = open.inFlight.count >= config.window
        var acknowledged = false
        while let first = open.inFlight.first, first.sequence <= sequence {
            learnPeerHolds(first.covers)
            open.inFlight.removeFirst()
            acknowledged = true
        }
        guard acknowledged else {
            return fail(ProtocolError(.unexpectedMessage, "ack of \(sequence), which was not sent"))
        }
        var actions: [Action] = []
        if var delta = open.outgoing, delta.reading == .waiting, open.inFlight.count < config.window {
            if windowWasFull, sequence >= open.roundBoundary {
                waitedRoundTrips += 1
                open.roundBoundary = open.nextSequence
            }
            delta.reading = .producing
            open.outgoing = delta
            actions.append(.produceBatch)
        }
        actions += finishDeltaIfComplete(&open)
        if open.outgoing == nil, open.inFlight.isEmpty { actions += checkUpToDate(open) }
        return settle(open, actions)
    }

    private func check(_ hello: Hello) -> ProtocolError? {
        if hello.version.major != ProtocolVersion.current.major {
            return ProtocolError(
                .protocolVersion,
                "peer speaks protocol \(hello.version), this node \(ProtocolVersion.current): upgrade the older node"
            )
        }
        if hello.clusterID != config.clusterID {
            return ProtocolError(
                .wrongCluster,
                "peer belongs to cluster \(hello.clusterID.short), this node to \(config.clusterID.short)"
            )
        }
        if hello.nodeID != config.authenticatedPeer {
            return ProtocolError(
                .identityMismatch,
                "hello claims node \(hello.nodeID.short) but the certificate proves \(config.authenticatedPeer.short)"
            )
        }
        if hello.nodeID == config.nodeID {
            return ProtocolError(
                .duplicateNodeID,
                "peer has this node's own id \(hello.nodeID.short): a copied data directory, or a node connected to itself"
            )
        }
        return tooManyWriters(hello.versionVector, "its hello")
            ?? tooManyWriters(hello.resume, "its hello's resume point")
            ?? tooManyWriters(hello.folded, "the writers its hello says it folded")
    }

    /// A refusal if `vector` (what the peer said, in `what`) names more writers than
    /// ``SessionConfig/maxWriters``: a permanent error, since the peer will say it again.
    private func tooManyWriters(_ vector: VersionVector, _ what: String) -> ProtocolError? {
        guard vector.counters.count > config.maxWriters else { return nil }
        return ProtocolError(
            .rejectedChange,
            "the peer names more than \(config.maxWriters) writers in \(what), past this node's limit (--max-writers); nothing more is taken from it"
        )
    }

    /// A batch produced: sent, and the next one asked for while the window allows. The last one
    /// (`last`: the runner read ahead and found the delta ends here) carries its `done` to a peer
    /// of protocol 1.9, and is followed by it at once to an older one.
    private mutating func produced(
        _ batch: DeltaBatch?,
        now: ContinuousClock.Instant,
        last: Bool,
        _ open: inout Open
    ) -> [Action] {
        guard var delta = open.outgoing else { return [] }
        guard let batch else {
            delta.reading = .exhausted(doneSent: false)
            open.outgoing = delta
            return finishDeltaIfComplete(&open)
        }
        let sequence = open.nextSequence
        open.nextSequence += 1
        open.inFlight.append((sequence, batch.covers, now))
        counters.sentUpdates += batch.updates.count
        delta.sentBatches += 1
        delta.covered.join(batch.covers)
        if last {
            let withDone = peer.map { $0.version >= .finalBatches } ?? false
            let message =
                withDone
                ? Message.finalBatch(sequence: sequence, batch, done: doneVector(delta))
                : Message.batch(sequence: sequence, batch)
            delta.reading = .exhausted(doneSent: withDone)
            open.outgoing = delta
            return [.send(message)] + finishDeltaIfComplete(&open)
        }
        var actions: [Action] = [.send(.batch(sequence: sequence, batch))]
        delta.reading = open.inFlight.count < config.window ? .producing : .waiting
        if delta.reading == .producing { actions.append(.produceBatch) }
        open.outgoing = delta
        return actions
    }

    /// The peer holds `vv` too.
    private mutating func learnPeerHolds(_ vv: VersionVector) {
        peerVersionVector.join(vv)
        peerMoved.join(vv)
    }

    /// What the peer was learnt to hold since the last call (``peerMoved``), emptied.
    public mutating func takePeerMoved() -> VersionVector {
        defer { peerMoved = VersionVector() }
        return peerMoved
    }

    private mutating func beginDelta(initial: Bool, _ open: inout Open) -> [Action] {
        var planned = peerVersionVector
        for batch in open.inFlight { planned.join(batch.covers) }
        var delta = Delta(isInitial: initial, startVersionVector: planned)
        // A later delta to a peer known to hold everything this replica holds has nothing to
        // send: it ends here, with no read of the replica (a newer change announces itself and
        // begins another). The first delta always goes: it also carries what no vector claims.
        if !initial, !unreadChange, let localVersion, planned.covers(localVersion) {
            delta.reading = .exhausted(doneSent: false)
            open.outgoing = delta
            return finishDeltaIfComplete(&open)
        }
        // The delta reads the replica after every change announced so far.
        unreadChange = false
        var actions: [Action] = [.startDelta(peerVersionVector: planned, initial: initial, deltaBase: deltaBase)]
        if open.inFlight.count < config.window {
            delta.reading = .producing
            actions.append(.produceBatch)
        }
        open.outgoing = delta
        return actions
    }

    /// Ends the outgoing delta once it is exhausted and acknowledged.
    private mutating func finishDeltaIfComplete(_ open: inout Open) -> [Action] {
        guard let delta = open.outgoing, case .exhausted(let doneSent) = delta.reading else { return [] }
        var actions: [Action] = []
        if delta.isInitial || delta.sentBatches > 0 {
            // The receiver learns it is up to date with us; an empty anti-entropy answer stays silent.
            if !doneSent { actions.append(.send(.done(versionVector: doneVector(delta)))) }
            // The peer completes the stream on `done`, before it reads anything sent after it.
            deltaBase?.join(delta.covered)
        }
        open.outgoing = nil
        if delta.isInitial { open.initialDeltaDone = true }
        if delta.changedWhileStreaming { actions += beginDelta(initial: false, &open) }
        return actions + checkUpToDate(open)
    }

    /// What a delta's `done` says: the vector the delta started from, for the writers it covered.
    /// No receiver reads more of it than its size (none has since protocol 1.0), and the whole
    /// vector names every writer of the cluster: at a relay of 500 members, 10 KB sent, encoded and
    /// encrypted with every live change to every member.
    private func doneVector(_ delta: Delta) -> VersionVector {
        let start = delta.startVersionVector
        return asTold(
            VersionVector(Dictionary(uniqueKeysWithValues: delta.covered.counters.keys.map { ($0, start[$0]) }))
        )
    }

    /// Reports "up to date" once both initial deltas are through, and again after every later
    /// delta in either direction completes (a one-shot session then finishes).
    private func checkUpToDate(_ open: Open) -> [Action] {
        guard open.initialDeltaDone, open.peerInitialDone, open.inFlight.isEmpty, open.outgoing == nil else {
            return []
        }
        return config.role == .oneShot ? [.upToDate, .finished] : [.upToDate]
    }

    private mutating func tick(_ now: ContinuousClock.Instant, localVersion: VersionVector?) -> [Action] {
        if case .awaitingHello(let since) = state, now - since > config.helloTimeout {
            return fail(ProtocolError(.timeout, "no hello within \(config.helloTimeout)"))
        }
        if let lastReceived, now - lastReceived > config.idleTimeout {
            return fail(ProtocolError(.timeout, "peer silent for \(config.idleTimeout)"))
        }
        guard case .open(var open) = state else { return [] }
        if let oldest = open.inFlight.first, now - oldest.sentAt > config.ackTimeout {
            return fail(ProtocolError(.timeout, "batch \(oldest.sequence) unacknowledged for \(config.ackTimeout)"))
        }
        var actions: [Action] = []
        if let missing = open.missing {
            if let localVersion, localVersion.covers(missing.entries) {
                open.missing = nil
            } else if now - missing.since >= config.graftDelay {
                // The change a `have` announced did not come another way: ask for it, and for
                // changes at once again; the summary says what this replica holds.
                open.missing = nil
                open.spread = .eager
                actions.append(.send(.graft))
                actions.append(localVersion.map { .send(.summary(versionVector: asTold($0))) } ?? .sendSummary)
                told = (localVersion, now)
            }
        }
        let round = now - open.lastSummary >= config.antiEntropyInterval
        if round {
            open.lastSummary = now
            // Anti-entropy on this side's behalf: the peer is known to lack something (a push was
            // missed, or nobody announced a change), or what this replica holds is unknown.
            if open.outgoing == nil, localVersion.map({ !peerVersionVector.covers($0) }) ?? true {
                actions += beginDelta(initial: false, &open)
            }
        }
        let changed = localVersion == nil || localVersion != told?.versionVector
        let quiet = told.map { now - $0.at >= config.idleTimeout / 3 } ?? true
        if (round && changed) || quiet {
            // Tell the peer what this replica holds when that changed (or is unknown here: the
            // runner reads it), and keep a quiet session alive; either way the peer can repair
            // what it missed.
            actions.append(localVersion.map { .send(.summary(versionVector: asTold($0))) } ?? .sendSummary)
            told = (localVersion, now)
        }
        return settle(open, actions)
    }

    /// Whether the peer takes hop counts (protocol 1.11): a change sent at once over a pruned
    /// session must say it is near its origin, or the peer would prune again.
    private var speaksHops: Bool { speaksViews && (peer?.version ?? .current) >= .hops }

    /// Whether the peer takes `have`, `prune` and `graft` (protocol 1.10) and both sides are
    /// members passing changes on (a relay's and a one-shot session push everything at once).
    private var speaksViews: Bool {
        guard let peer else { return false }
        return peer.version >= .views && peer.role == .peer && config.role == .peer
    }

    /// A vector as this side tells it in the session: without the writers its hello said it
    /// folded, to a peer that reads them back (protocol 1.8); whole to an older one.
    public func asTold(_ vector: VersionVector) -> VersionVector {
        guard let peer, peer.version >= .folding else { return vector }
        return vector.folded(by: folded)
    }

    private mutating func fail(_ error: ProtocolError) -> [Action] {
        state = .closed
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
        case .finalBatch: "final batch"
        case .summary: "summary"
        case .expect: "expect"
        case .error: "error"
        case .joinRequest: "join request"
        case .joinAccepted: "join answer"
        case .have: "have"
        case .prune: "prune"
        case .graft: "graft"
        case .report: "report"
        case .reached(_, let inner): inner.kind
        }
    }
}
