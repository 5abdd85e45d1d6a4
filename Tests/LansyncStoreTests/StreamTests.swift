import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

/// Streams between real replicas, in SQLite files and in PostgreSQL alike (the delta reading and
/// the receipt of a batch are written once for both), while the replicas keep changing: writes land between the
/// batches of a stream, streams run side by side and relay what they received, some are cut off
/// and resumed. Once everything has been exchanged, the replicas must be equal, and a replica
/// whose version vector claims a write must show it. Field deltas are taken against the claims,
/// so a stream that claims a write without carrying its field would leave a list element out
/// for good, with equal vectors (the chaos suite's partition scenario found one such hole).
/// Half the advances read one batch ahead, and a batch found to be the last is applied with its
/// stream's completion in one transaction (protocol 1.9's final batch).
@Suite(.computeBound) struct StreamTests {
    let t0: UInt64 = 1_700_000_000_000

    /// `batch` of `sender`'s stream, as a session receives it.
    func receive(
        _ batch: DeltaBatch,
        into store: any ReplicaStorage,
        from sender: NodeID,
        at wall: UInt64,
        completing: Bool
    ) throws {
        try store.receive(
            batch,
            from: sender,
            incarnation: sender,
            wallMilliseconds: wall,
            refuse: nil,
            revoked: RevokedWriters(),
            writers: .standard,
            allowance: nil,
            rejoinedAt: nil,
            completingStream: completing
        )
    }

    /// A stream under way: who sends, who receives, and where it stands.
    struct Running {
        let sender: Int
        let receiver: Int
        var stream: any DeltaSource
        /// A batch read ahead (as a node reads past a small batch to know whether it is the last).
        var ahead: DeltaBatch?
    }

    @Test(arguments: StorageKind.all, 0..<UInt64(propertyCases(default: 2500) / 50))
    func streamsUnderWritesConverge(kind: StorageKind, seed: UInt64) throws {
        var rng = SplitMix64(seed: seed &+ 0x5EED)
        let site = try StorageSite(kind, "streams")
        defer { site.close() }
        let stores = try (1...3).map { n in try site.replica(UInt64(n)) }
        let items = [ItemID.named("a"), .named("b")]
        // Lists long enough that a delta saves bytes over the whole state.
        for id in items {
            let edit = ItemEdit.create(
                type: "t",
                assignments: [
                    .set(.named("tags"), .list((0..<12).map { .string("s\($0)") })), .set(.named("n"), .integer(0)),
                ]
            )
            try stores[0].apply(edit, to: id, wallMilliseconds: t0)
        }
        var running: [Running] = []
        var wall = t0
        func start(_ sender: Int, _ receiver: Int, first: Bool = true) throws -> Running {
            // As a session does: resume what the receiver got of the last stream, against what
            // it has seen whole.
            let held = try stores[receiver].versionVector()
            var start = held
            if let resume = try stores[receiver].sessionStart(with: .node(UInt64(sender + 1))).resume {
                start.join(resume.covers)
            }
            let stream = try stores[sender].deltaStream(
                for: start,
                maxUpdates: 2,
                budgetBytes: 2 << 20,
                unclaimed: first,
                deltaBase: held
            )
            return Running(sender: sender, receiver: receiver, stream: stream)
        }
        func advance(_ index: Int) throws -> Bool {
            let r = running[index]
            var stream = r.stream
            let held = try stores[r.receiver].versionVector()
            let sender = NodeID.node(UInt64(r.sender + 1))
            let next = r.ahead != nil ? r.ahead : try stream.next(peerHolds: held)
            running[index].ahead = nil
            guard let batch = next else {
                try stores[r.receiver].completeStream(from: sender, rejoinedAt: nil)
                return false
            }
            if rng.chance(50) {
                let after = try stream.next(peerHolds: held)
                running[index].stream = stream
                guard let after else {
                    try receive(batch, into: stores[r.receiver], from: sender, at: wall, completing: true)
                    return false
                }
                running[index].ahead = after
            }
            try receive(batch, into: stores[r.receiver], from: sender, at: wall, completing: false)
            running[index].stream = stream
            return true
        }
        for receiver in 1..<3 {
            running = [try start(0, receiver)]
            while try advance(0) {}
        }
        running = []
        for _ in 0..<80 {
            wall += 7
            let roll = Int.random(in: 0..<100, using: &rng)
            if roll < 40 {
                let at = Int.random(in: 0..<3, using: &rng)
                let item = items[Int.random(in: 0..<items.count, using: &rng)]
                let element = Value.string("e\(Int.random(in: 0..<6, using: &rng))")
                let assignment: Assignment =
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: .remove(.named("tags"), element)
                    case 1: .set(.named("n"), .integer(Int64.random(in: 0..<5, using: &rng)))
                    default: .add(.named("tags"), element)
                    }
                try stores[at].apply(.update([assignment]), to: item, wallMilliseconds: wall)
            } else if roll < 60 || running.isEmpty {
                let sender = Int.random(in: 0..<3, using: &rng)
                let receiver = (sender + Int.random(in: 1...2, using: &rng)) % 3
                guard !running.contains(where: { $0.sender == sender && $0.receiver == receiver }) else { continue }
                // A session's first delta, or a later one (a push, an anti-entropy round).
                running.append(try start(sender, receiver, first: rng.chance(40)))
            } else if roll < 95 {
                let index = Int.random(in: 0..<running.count, using: &rng)
                if try !advance(index) { running.remove(at: index) }
            } else {
                // Cut off: the receiver keeps what it got, to resume from.
                running.remove(at: Int.random(in: 0..<running.count, using: &rng))
            }
        }
        // Finish what runs, then rounds of whole exchanges until nothing moves.
        while !running.isEmpty {
            if try !advance(0) { running.remove(at: 0) }
        }
        for _ in 0..<3 {
            for sender in 0..<3 {
                for receiver in 0..<3 where receiver != sender {
                    running = [try start(sender, receiver)]
                    while try advance(0) {}
                }
            }
        }
        let vectors = try stores.map { try $0.versionVector() }
        #expect(vectors[1] == vectors[0] && vectors[2] == vectors[0], "\(kind) seed \(seed): vectors differ")
        let shown = try stores.map { try StoreModelTests.visible($0) }
        for n in 1..<3 where shown[n] != shown[0] {
            Issue.record(
                "\(kind) seed \(seed): r\(n + 1) shows \(shown[n].filter { !shown[0].contains($0) }), r1 \(shown[0].filter { !shown[n].contains($0) })"
            )
        }
    }
}
