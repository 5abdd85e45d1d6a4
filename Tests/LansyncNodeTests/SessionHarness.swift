import LansyncCore
import LansyncNode
import LansyncTestSupport
import LansyncWire
import Testing

/// Two session machines joined by an in-memory link, their actions performed against in-memory
/// replicas: the protocol end to end, with no sockets, threads or clocks.
struct SessionHarness {
    struct Side {
        var machine: SessionMachine
        var replica: Replica
        var delta: [DeltaBatch] = []
        var inbox: [Message] = []
        var events: [SessionMachine.Action] = []
        var sentBatches = 0
        var maxInFlight = 0
        var acksReceived = 0
        var sent: [Message] = []
    }

    var sides: [Side]
    var now = ContinuousClock.now
    var linkUp = true
    /// A side that never receives anything (its peer stalls from its point of view).
    var deaf: Int?
    var batchSize = 3
    /// Whether the runner tells the machine a delta's last batch is the last (as the node's,
    /// which reads ahead after a small batch, does).
    var readsAhead = true
    /// Messages delivered so far; the link breaks when it reaches `cutAfter`.
    var delivered = 0
    var cutAfter = Int.max

    static let cluster = NodeID.node(99)

    init(_ a: Replica, _ b: Replica, roleA: Hello.Role = .peer, roleB: Hello.Role = .peer, window: Int = 4) {
        func config(_ me: Replica, _ other: Replica, _ role: Hello.Role) -> SessionMachine.SessionConfig {
            var c = SessionMachine.SessionConfig(
                nodeID: me.nodeID,
                clusterID: Self.cluster,
                role: role,
                name: "n",
                authenticatedPeer: other.nodeID
            )
            c.window = window
            return c
        }
        sides = [
            Side(machine: SessionMachine(config: config(a, b, roleA)), replica: a),
            Side(machine: SessionMachine(config: config(b, a, roleB)), replica: b),
        ]
    }

    mutating func start() {
        for i in 0..<2 {
            let resume = sides[i].replica.resume(from: sides[1 - i].replica.nodeID)
            handle(
                i,
                .start(
                    versionVector: sides[i].replica.versionVector,
                    resume: resume?.covers ?? VersionVector(),
                    resumeFor: resume?.incarnation,
                    now: now
                )
            )
        }
    }

    mutating func handle(_ i: Int, _ event: SessionMachine.Event) {
        var queue = sides[i].machine.handle(event)[...]
        while let action = queue.popFirst() {
            sides[i].events.append(action)
            switch action {
            case .send(let message):
                sides[i].sent.append(message)
                if message.carriesBatch {
                    sides[i].sentBatches += 1
                    sides[i].maxInFlight = max(sides[i].maxInFlight, sides[i].sentBatches - sides[i].acksReceived)
                }
                if linkUp, deaf != 1 - i { sides[1 - i].inbox.append(message) }
            case let .apply(sequence, batch), let .applyFinal(sequence, batch):
                let sender = sides[1 - i].replica
                let merged = sides[i].replica.apply(
                    batch,
                    from: sender.nodeID,
                    incarnation: sender.writer,
                    wallMilliseconds: 1_700_000_000_000
                )
                // A node refuses a batch of deltas against more than it holds: the machine must
                // never plan one.
                #expect(merged, "a batch of deltas against \(batch.base.map(\.description) ?? "-") was refused")
                if case .applyFinal = action { sides[i].replica.completeStream(from: sender.nodeID) }
                queue += sides[i].machine.handle(.applied(sequence: sequence, now: now))
            case .completeStream:
                sides[i].replica.completeStream(from: sides[1 - i].replica.nodeID)
            case .startDelta(let vv, _, let deltaBase):
                sides[i].delta = sides[i].replica.delta(for: vv, maxUpdates: batchSize, deltaBase: deltaBase)
            case .produceBatch:
                let next = sides[i].delta.isEmpty ? nil : sides[i].delta.removeFirst()
                let last = readsAhead && next != nil && sides[i].delta.isEmpty
                queue += sides[i].machine.handle(.produced(next, now: now, last: last))
            case .sendSummary:
                let message = Message.summary(versionVector: sides[i].replica.versionVector)
                sides[i].sent.append(message)
                if linkUp { sides[1 - i].inbox.append(message) }
            case .peerReady(let hello):
                sides[i].replica.meet(hello.nodeID, incarnation: hello.writer)
            case .readVersion:
                queue += sides[i].machine.handle(
                    .localChanged(localVersion: sides[i].replica.versionVector)
                )
            case .upToDate, .finished, .close, .wake:
                break
            }
        }
    }

    /// Delivers messages until both inboxes are empty (or the link breaks).
    mutating func run(limit: Int = 100_000) {
        var steps = 0
        while steps < limit, let i = sides.indices.first(where: { !sides[$0].inbox.isEmpty }) {
            steps += 1
            let message = sides[i].inbox.removeFirst()
            if case .ack = message { sides[i].acksReceived += 1 }
            delivered += 1
            if delivered > cutAfter {
                linkUp = false
                sides[0].inbox.removeAll()
                sides[1].inbox.removeAll()
                return
            }
            handle(i, .received(message, now: now))
        }
    }

    /// Time passes; each side's runner knows its replica's vector (as the change hub does), or
    /// not (`knowing: false`, as a one-shot sync).
    mutating func tick(by duration: Duration, knowing: Bool = true) {
        now += duration
        for i in 0..<2 { handle(i, .tick(now: now, localVersion: knowing ? sides[i].replica.versionVector : nil)) }
    }

    func did(_ i: Int, _ predicate: (SessionMachine.Action) -> Bool) -> Bool {
        sides[i].events.contains(where: predicate)
    }
}

extension Message {
    /// A batch, alone or with its `done`.
    var carriesBatch: Bool {
        switch self {
        case .batch, .finalBatch: true
        default: false
        }
    }
}

extension SessionMachine.Action {
    var isUpToDate: Bool { if case .upToDate = self { true } else { false } }
    var isFinished: Bool { if case .finished = self { true } else { false } }
    var closeError: ProtocolError? { if case .close(let e, _) = self { e } else { nil } }
}

/// Replicas with a few items each, and a shared one edited on both.
func sampleReplicas(items: Int = 20) throws -> (Replica, Replica) {
    var a = Replica(nodeID: .node(1))
    var b = Replica(nodeID: .node(2))
    for i in 0..<items {
        try a.apply(
            .create(
                type: "t",
                assignments: [.set(.named("v"), .integer(Int64(i))), .add(.named("tags"), .string("a\(i % 3)"))]
            ),
            to: .named("a\(i)"),
            wallMilliseconds: 1_700_000_000_000
        )
        try b.apply(
            .create(type: "t", assignments: [.set(.named("v"), .string("b\(i)"))]),
            to: .named("b\(i)"),
            wallMilliseconds: 1_700_000_000_001
        )
    }
    return (a, b)
}
