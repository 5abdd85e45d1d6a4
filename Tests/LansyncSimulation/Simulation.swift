import LansyncCore
public import LansyncNode
import LansyncTestSupport
import LansyncWire

/// A cluster of lansync nodes in one process (issue 33, Docs/SCALE.md): each node is the pure
/// session machine (``SessionMachine``) and view (``PeerView``) the real node runs, over an
/// in-memory replica (``Replica``, the merge core's model), and the network between them is
/// simulated: latency, loss (TCP resends a lost segment after a retransmission timeout, so a
/// loss is a delay), partitions (a session across one stalls until its idle timeout, as over a
/// dropped route), crashes, restarts, joins and leaves.
///
/// Every random choice comes from one seeded generator and every event from one queue ordered by
/// simulated time, so a run is a pure function of its ``Config`` and seed: a failure prints its
/// seed, and the same seed replays it (in the spirit of FoundationDB's simulation and
/// TigerBeetle's VOPR).
public struct Simulation {
    /// The cluster and network a run simulates.
    public struct Config: Sendable {
        public var nodes: Int
        public var seed: UInt64
        public var view = PeerView.Limits()
        /// One-way latency of a message, drawn per message (milliseconds).
        public var latency: ClosedRange<Int> = 1...5
        /// The chance that a segment is lost: TCP sends it again after ``retransmit`` (doubled at
        /// each further loss).
        public var loss = 0.0
        public var retransmit: Duration = .milliseconds(200)
        /// How often a node opens a short session with a member outside its active view.
        public var antiEntropyEvery: Duration = .seconds(10)
        /// How many members (the first ones: the relay, or a `--peer` everyone is given) every
        /// node knows when it starts or joins, beside a few others (what mDNS shows).
        public var introducers = 1
        public var alsoKnown = 3
        /// How many members a hello passes on (a sample of the sender's view).
        public var passedOn = 8
        /// The session machines' ``SessionMachine/SessionConfig/graftAhead`` (nil: its default).
        public var graftAhead: Duration?
        /// The session machines' ``SessionMachine/SessionConfig/graftDelay`` (nil: its default).
        public var graftDelay: Duration?
        /// ``HopRecord/flood`` (nil: as the node picks it for the cluster size it knows of); 0
        /// turns hop counts off (protocol 1.10's spread).
        public var flood: Int?
        /// How long a dial to an unreachable address takes to fail.
        public var connectTimeout: Duration = .seconds(3)

        public init(nodes: Int, seed: UInt64) {
            self.nodes = nodes
            self.seed = seed
        }
    }

    /// A session between two nodes: side 0 dialled it.
    struct Session {
        let nodes: [Int]
        var machines: [SessionMachine]
        var deltas: [[DeltaBatch]] = [[], []]
        var open = [true, true]
        /// When the last message to each side is due (TCP delivers in order).
        var due: [Duration] = [.zero, .zero]
        /// How many deliveries were sent to each side: their order.
        var sent = [0, 0]
        /// Deliveries to each side held by a partition, with their order.
        var held: [[(order: Int, delivery: Delivery)]] = [[], []]
        /// The hops the last message to each side said its changes took (``Message/reached(hops:_:)``).
        var hops: [UInt8?] = [nil, nil]
        /// A short anti-entropy session outside the view, closed by its dialler once up to date.
        let antiEntropy: Bool
    }

    /// What travels to one side of a session: a message, or the end of the connection.
    enum Delivery {
        case message(Message)
        case close

        var withoutHops: Delivery {
            if case .message(let message) = self { .message(message.withoutHops) } else { self }
        }
    }

    struct Node {
        var replica: Replica
        var view: PeerView
        var up = false
        /// Started (or joined) and not left: what convergence is judged over while up.
        var member = false
        /// The view's sessions by peer, and the anti-entropy sessions.
        var sessions: [Int: Int] = [:]
        var antiEntropy: Set<Int> = []
        var nextAntiEntropy: Duration = .zero
        /// The hop at which each tracked change reached this node (0 where it was made).
        var hops: [ItemID: Int] = [:]
        /// The node's own record of hops, by session (what the real node keeps).
        var record: HopRecord
        /// Since a partition healed: the hop at which each tracked change reached this node,
        /// counted from the nodes that held it at the heal (0 there).
        var hopsAfterHeal: [ItemID: Int] = [:]
        /// About how many members it has heard of (``MemberSketch``), merged from hellos.
        var sketch = MemberSketch()
    }

    enum Event {
        case deliver(session: Int, to: Int, order: Int, Delivery)
        case connect(from: Int, to: Int, antiEntropy: Bool)
        case dialFailed(from: Int, to: Int, antiEntropy: Bool)
        case tick(node: Int, generation: Int)
        /// `forwarded`: a peer's batch changed the replica (its vector is read with it), else a
        /// local edit (announced before its vector is read, as on a real node).
        case changed(node: Int, except: Int?, forwarded: Bool, hops: UInt8? = 0)
        case wake(session: Int, side: Int)
    }

    /// A change the run follows: an item created on `origin`.
    struct Tracked {
        let origin: Int
        let at: Duration
        var reached: [Duration] = []
        var deliveries = 0
        var deepest = 0
        /// The deepest hop it reached a node at counted from where it was when a partition
        /// healed (nil: no partition healed while it spread).
        var deepestAfterHeal: Int?
        /// The sessions that carried it, and to which side.
        var carried: Set<Carried> = []
    }

    struct Carried: Hashable {
        let session: Int
        let to: Int
    }

    public let config: Config
    var rng: SplitMix64
    var now: Duration = .zero
    let epoch = ContinuousClock.now
    var queue = EventQueue<Event>()
    var nodes: [Node] = []
    var ids: [NodeID] = []
    var index: [NodeID: Int] = [:]
    var sessions: [Int: Session] = [:]
    var nextSession = 0
    /// Which group each node is in while a partition holds (nil: none).
    var groups: [Int]?
    /// Bumped at each restart, so a crashed node's ticks stop.
    var generations: [Int] = []
    var tracked: [ItemID: Tracked] = [:]
    var edits = 0
    /// Counters since ``resetCounters()``.
    public internal(set) var counters = Counters()
    /// Problems the run met that are bugs, not conditions (a refused batch): the test fails on any.
    public internal(set) var faults: [String] = []

    /// What the network carried.
    public struct Counters: Sendable {
        public var messages = 0
        public var batches = 0
        public var fieldStates = 0
        public var dials = 0
        public var refusedDials = 0
        public var antiEntropySessions = 0
        /// Deliveries of a change to a node over a session that had carried it to that node
        /// before: the machine sent it twice.
        public var resentInSession = 0
        public var prunes = 0
        public var grafts = 0
        public var haves = 0
    }

    static let cluster = NodeID(high: 0x5EED, low: 0xC1)
    static let wallStart: UInt64 = 1_700_000_000_000

    public init(_ config: Config) {
        self.config = config
        rng = SplitMix64(seed: config.seed)
        for n in 0..<config.nodes { addNode(n) }
    }

    private mutating func addNode(_ n: Int) {
        let id = NodeID.node(UInt64(n + 1))
        ids.append(id)
        index[id] = n
        let replica = Replica(nodeID: id)
        nodes.append(
            Node(
                replica: replica,
                view: PeerView(me: id, limits: config.view),
                record: HopRecord(writer: replica.writer)
            )
        )
        nodes[n].sketch.insert(id)
        generations.append(0)
    }

    var instant: ContinuousClock.Instant { epoch + now }
    var wall: UInt64 {
        Self.wallStart + UInt64(now.components.seconds * 1000 + now.components.attoseconds / 1_000_000_000_000_000)
    }

    // MARK: The run

    /// Starts node `n` (a first start or a join): it knows the introducers and a few members.
    public mutating func start(_ n: Int) {
        if n >= nodes.count { for k in nodes.count...n { addNode(k) } }
        var known = Array(0..<min(config.introducers, nodes.count))
        let others = (0..<nodes.count).filter { nodes[$0].member && $0 != n }
        for _ in 0..<config.alsoKnown where !others.isEmpty { known.append(others.randomElement(using: &rng)!) }
        nodes[n].view.learn(known.filter { $0 != n }.map { ids[$0] }, using: &rng)
        nodes[n].member = true
        bringUp(n)
    }

    mutating func bringUp(_ n: Int) {
        nodes[n].up = true
        generations[n] += 1
        nodes[n].nextAntiEntropy = now + jitter(config.antiEntropyEvery)
        queue.push(.tick(node: n, generation: generations[n]), at: now + jitter(.seconds(1)))
    }

    /// Runs every event due within `duration`.
    public mutating func run(for duration: Duration) {
        let end = now + duration
        while let next = queue.firstTime, next <= end {
            let (at, event) = queue.pop()!
            now = at
            handle(event)
        }
        now = end
    }

    /// Runs until every member that is up holds the same replica; how long that took, or nil
    /// after `timeout`.
    public mutating func runUntilConverged(timeout: Duration, step: Duration = .milliseconds(50)) -> Duration? {
        let start = now
        while now - start < timeout {
            if converged { return now - start }
            run(for: step)
        }
        return converged ? now - start : nil
    }

    /// Whether every member that is up holds the same version vector and items.
    public var converged: Bool {
        let live = nodes.filter { $0.up && $0.member }
        guard let first = live.first else { return true }
        return live.allSatisfy {
            $0.replica.versionVector == first.replica.versionVector && $0.replica.items == first.replica.items
        }
    }

    /// Between half and one and a half `d` (whole milliseconds).
    mutating func jitter(_ d: Duration) -> Duration {
        d / 2 + .milliseconds(Int64(rng.next(upperBound: UInt64(max(1, d.components.seconds * 1000)))))
    }

    private mutating func handle(_ event: Event) {
        switch event {
        case let .deliver(s, to, order, delivery): deliver(delivery, order: order, session: s, to: to)
        case let .connect(from, to, antiEntropy): connect(from: from, to: to, antiEntropy: antiEntropy)
        case let .dialFailed(from, to, _):
            if nodes[from].up { nodes[from].view.failed(ids[to]) }
        case let .tick(n, generation):
            guard nodes[n].up, generations[n] == generation else { return }
            tick(n)
            queue.push(.tick(node: n, generation: generation), at: now + .seconds(1))
        case let .changed(n, except, forwarded, hops):
            guard nodes[n].up else { return }
            // As on a real node: a local edit is announced before its vector is read
            // (``ChangeHub/notifyUnread()``); a batch applied comes with the vector read after it.
            let version = forwarded ? nodes[n].replica.versionVector : nil
            let eager = nodes[n].record.floods(hops)
            for s in sessionIDs(of: n) where s != except {
                guard let side = side(of: n, in: s) else { continue }
                let event = SessionMachine.Event.localChanged(localVersion: version, now: instant, eager: eager)
                perform(sessions[s]!.machines[side].handle(event), session: s, side: side)
            }
        case let .wake(s, side):
            guard let session = sessions[s], session.open[side] else { return }
            let version = nodes[session.nodes[side]].replica.versionVector
            perform(
                sessions[s]!.machines[side].handle(.tick(now: instant, localVersion: version)),
                session: s,
                side: side
            )
        }
    }

    func sessionIDs(of n: Int) -> [Int] { (Array(nodes[n].sessions.values) + nodes[n].antiEntropy).sorted() }

    func side(of n: Int, in s: Int) -> Int? {
        guard let session = sessions[s] else { return nil }
        let side = session.nodes[0] == n ? 0 : 1
        return session.open[side] ? side : nil
    }

    /// Once a second: sessions tick every fifth, the view is kept full, anti-entropy when due.
    private mutating func tick(_ n: Int) {
        if Int(now.components.seconds) % 5 == n % 5 {
            let version = nodes[n].replica.versionVector
            for s in sessionIDs(of: n) {
                guard let side = side(of: n, in: s) else { continue }
                perform(
                    sessions[s]!.machines[side].handle(.tick(now: instant, localVersion: version)),
                    session: s,
                    side: side
                )
            }
        }
        for peer in nodes[n].view.excess(using: &rng) {
            if let s = nodes[n].sessions[index[peer]!], let side = side(of: n, in: s) { close(s, side: side) }
        }
        for peer in nodes[n].view.toDial(using: &rng) { dial(from: n, to: index[peer]!, antiEntropy: false) }
        if now >= nodes[n].nextAntiEntropy {
            nodes[n].nextAntiEntropy = now + jitter(config.antiEntropyEvery) + config.antiEntropyEvery / 2
            if let partner = nodes[n].view.antiEntropyPartner(using: &rng) {
                dial(from: n, to: index[partner]!, antiEntropy: true)
            }
        }
    }

    // MARK: Connections

    func reachable(_ a: Int, _ b: Int) -> Bool { groups.map { $0[a] == $0[b] } ?? true }

    mutating func latency() -> Duration {
        var delay = Duration.milliseconds(Int64(Int.random(in: config.latency, using: &rng)))
        var timeout = config.retransmit
        while config.loss > 0, Double(rng.next() % 1_000_000) / 1_000_000 < config.loss {
            delay += timeout
            timeout *= 2
        }
        return delay
    }

    private mutating func dial(from: Int, to: Int, antiEntropy: Bool) {
        counters.dials += 1
        if reachable(from, to) {
            // TCP's handshake, then TLS and hellos (the machines exchange those as messages).
            queue.push(.connect(from: from, to: to, antiEntropy: antiEntropy), at: now + latency() + latency())
        } else {
            queue.push(.dialFailed(from: from, to: to, antiEntropy: antiEntropy), at: now + config.connectTimeout)
        }
    }

    private mutating func connect(from: Int, to: Int, antiEntropy: Bool) {
        guard nodes[from].up else { return }
        guard nodes[to].up else {
            // Refused at once: nothing listens there.
            nodes[from].view.failed(ids[to])
            return
        }
        if let existing = nodes[from].sessions[to], sessions[existing] != nil {
            // Connected already (it dialled us meanwhile): the view has it.
            if !antiEntropy { nodes[from].view.opened(ids[to], dialled: true) }
            return
        }
        if antiEntropy {
            counters.antiEntropySessions += 1
            open(from: from, to: to, antiEntropy: true)
            return
        }
        let alone = nodes[from].sessions.isEmpty
        guard nodes[to].view.accepts(ids[from], alone: alone) else {
            counters.refusedDials += 1
            nodes[from].view.failed(ids[to])
            return
        }
        open(from: from, to: to, antiEntropy: false)
        nodes[from].view.opened(ids[to], dialled: true)
        nodes[to].view.opened(ids[from], dialled: false, alone: alone)
        // A member let in because it was alone: another session of the full view goes at once.
        for peer in nodes[to].view.excess(using: &rng) {
            if let s = nodes[to].sessions[index[peer]!], let side = side(of: to, in: s) { close(s, side: side) }
        }
    }

    private mutating func open(from: Int, to: Int, antiEntropy: Bool) {
        let s = nextSession
        nextSession += 1
        func config(_ me: Int, _ other: Int) -> SessionMachine.SessionConfig {
            var config = SessionMachine.SessionConfig(
                nodeID: ids[me],
                clusterID: Self.cluster,
                role: .peer,
                name: "n\(me)",
                authenticatedPeer: ids[other],
                writer: nodes[me].replica.writer
            )
            if let ahead = self.config.graftAhead { config.graftAhead = ahead }
            if let delay = self.config.graftDelay { config.graftDelay = delay }
            config.members = nodes[me].sketch
            return config
        }
        sessions[s] = Session(
            nodes: [from, to],
            machines: [SessionMachine(config: config(from, to)), SessionMachine(config: config(to, from))],
            antiEntropy: antiEntropy
        )
        if antiEntropy {
            nodes[from].antiEntropy.insert(s)
            nodes[to].antiEntropy.insert(s)
        } else {
            nodes[from].sessions[to] = s
            nodes[to].sessions[from] = s
        }
        for side in 0..<2 {
            let me = sessions[s]!.nodes[side]
            let resume = nodes[me].replica.resume(from: ids[sessions[s]!.nodes[1 - side]])
            let start = SessionMachine.Event.start(
                versionVector: nodes[me].replica.versionVector,
                resume: resume?.covers ?? VersionVector(),
                resumeFor: resume?.incarnation,
                now: instant
            )
            perform(sessions[s]!.machines[side].handle(start), session: s, side: side)
        }
    }

    /// Side `side` ends session `s`; its peer learns it when the connection's end reaches it.
    mutating func close(_ s: Int, side: Int, tellPeer: Bool = true) {
        guard var session = sessions[s], session.open[side] else { return }
        session.open[side] = false
        sessions[s] = session
        detach(s, side: side)
        if tellPeer, session.open[1 - side] { send(.close, session: s, to: 1 - side) }
        if !session.open[0] && !session.open[1] { sessions[s] = nil }
    }

    private mutating func detach(_ s: Int, side: Int) {
        let session = sessions[s]!
        let (me, peer) = (session.nodes[side], session.nodes[1 - side])
        if session.antiEntropy {
            nodes[me].antiEntropy.remove(s)
        } else if nodes[me].sessions[peer] == s {
            nodes[me].sessions[peer] = nil
            nodes[me].view.closed(ids[peer], using: &rng)
        }
    }

    mutating func send(_ delivery: Delivery, session s: Int, to side: Int) {
        guard let session = sessions[s] else { return }
        if case .message(let message) = delivery.withoutHops {
            counters.messages += 1
            switch message {
            case .prune: counters.prunes += 1
            case .graft: counters.grafts += 1
            case .have: counters.haves += 1
            default: break
            }
            if case .batch(_, let batch) = message { count(batch) }
            if case .finalBatch(_, let batch, _) = message { count(batch) }
        }
        let order = session.sent[side]
        sessions[s]!.sent[side] += 1
        guard reachable(session.nodes[0], session.nodes[1]) else {
            sessions[s]!.held[side].append((order, delivery))
            return
        }
        transmit(delivery, order: order, session: s, to: side)
    }

    /// Puts a delivery on the wire: due after a latency, never before the one sent before it.
    mutating func transmit(_ delivery: Delivery, order: Int, session s: Int, to side: Int) {
        let at = max(now + latency(), sessions[s]!.due[side])
        sessions[s]!.due[side] = at
        queue.push(.deliver(session: s, to: side, order: order, delivery), at: at)
    }

    private mutating func count(_ batch: DeltaBatch) {
        counters.batches += 1
        counters.fieldStates += batch.updates.count
    }

    private mutating func deliver(_ delivery: Delivery, order: Int, session s: Int, to side: Int) {
        guard let session = sessions[s], session.open[side] else { return }
        guard reachable(session.nodes[0], session.nodes[1]) else {
            // In flight when the partition began: held with what was sent after it.
            sessions[s]!.held[side].append((order, delivery))
            return
        }
        switch delivery {
        case .close: close(s, side: side, tellPeer: false)
        case .message(let message):
            // As the node's session driver reads it: a batch of the peer's first delta is a
            // catch-up, spread from here as if made here.
            if message.isBatch {
                sessions[s]!.hops[side] = session.machines[side].peerCatchingUp ? HopRecord.caughtUp : message.hops
            }
            perform(sessions[s]!.machines[side].handle(.received(message, now: instant)), session: s, side: side)
        }
    }
}
