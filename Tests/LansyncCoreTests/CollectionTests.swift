import LansyncCore
import LansyncTestSupport
import PropertyBased
import Testing

/// Collection below the stable frontier (Docs/MERGE.md, "Causal stability and collection"):
/// random histories of 3–5 replicas with creates, edits, deletes and restores, partitions,
/// skewed clocks and long pauses, where each replica collects at random moments. Every replica
/// runs in lockstep with a twin that never collects (same edits, same exchanges); at the end
/// each must show what its twin shows, all must agree, and no item collected anywhere may be
/// live anywhere.
@Suite struct CollectionTests {
    @Test func collectingNeverChangesWhatReplicasShow() async {
        await propertyCheck(
            count: propertyCases(default: 1000),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 3...5),
            Gen.int(in: 10...120)
        ) { seed, replicas, steps in
            var history = CollectingHistory(seed: seed, replicaCount: replicas)
            history.run(steps: steps)
            let problems = history.problems
            #expect(
                problems.isEmpty,
                "\(problems.prefix(5).joined(separator: "\n"))\nseed \(seed), \(replicas) replicas, \(steps) steps\n\(history.log.suffix(30).joined(separator: "\n"))"
            )
        }
    }

    /// The property above is not vacuous: across a fixed set of histories, items are collected.
    @Test func historiesDoCollect() {
        var collected = 0
        for seed in UInt64(1)...60 {
            var history = CollectingHistory(seed: seed, replicaCount: 4)
            history.run(steps: 120)
            #expect(history.problems.isEmpty, "seed \(seed): \(history.problems.prefix(3))")
            collected += history.collectedCount
        }
        #expect(collected > 0)
    }

    @Test func frontierIsThePointwiseMinimum() {
        let a = VersionVector([.node(1): 5, .node(2): 3])
        let b = VersionVector([.node(1): 2, .node(2): 7, .node(3): 1])
        #expect(StabilityLedger.frontier(of: [a, b]) == VersionVector([.node(1): 2, .node(2): 3]))
        #expect(StabilityLedger.laggard(of: ["a": a, "b": b]) == "a")
    }

    @Test func aCheckpointBecomesStableOnlyOnceEveryoneHoldsWhatItsReportsHeld() {
        var ledger = StabilityLedger()
        let x = NodeID.node(1)
        let y = NodeID.node(2)
        // x deleted (x:1); y had made y:1 concurrently and already seen x:1.
        ledger.observe([VersionVector([x: 1]), VersionVector([x: 1, y: 1])], reportedAt: 1, now: 1)
        #expect(ledger.stable.isEmpty)
        // The frontier is x:1, but x does not hold y:1 yet: not stable.
        ledger.observe([VersionVector([x: 1]), VersionVector([x: 1, y: 1])], reportedAt: 1, now: 2)
        #expect(ledger.stable.isEmpty)
        // x now holds y:1: the first checkpoint's frontier (x:1) is stable, as of its reports.
        ledger.observe([VersionVector([x: 1, y: 1]), VersionVector([x: 1, y: 1])], reportedAt: 3, now: 3)
        #expect(ledger.stable == VersionVector([x: 1]))
        #expect(ledger.stableAt == 3)
        #expect(ledger.stableReportedAt == 1)
        // Nothing new: the next round takes up the checkpoint of round 3.
        ledger.observe([VersionVector([x: 1, y: 1]), VersionVector([x: 1, y: 1])], reportedAt: 4, now: 4)
        #expect(ledger.stable == VersionVector([x: 1, y: 1]))
        #expect(ledger.stableReportedAt == 3)
    }
}

/// Replicas that collect, each beside a twin that never does.
struct CollectingHistory {
    var rng: SplitMix64
    var collecting: [Replica]
    var twins: [Replica]
    var ledgers: [StabilityLedger]
    /// What each replica knows of every replica's vector (its own included) and when that
    /// replica reported it (by the wall clock of whoever met it): the hellos' gossip.
    var reports: [[VersionVector]]
    var reportedAt: [[UInt64]]
    var walls: [UInt64]
    /// Replicas that can meet now (a partition splits them in two groups).
    var side: [Int]
    var log: [String] = []
    var problems: [String] = []
    var collectedCount = 0
    var everCollected = Set<ItemID>()

    static let trashWindow: UInt64 = 10_000
    /// Clock skew between replicas stays under this: collection waits it out past the window.
    static let margin: UInt64 = 2 * 3_600_000
    static let fields = ["a", "b", "tags"].map(FieldName.named)

    init(seed: UInt64, replicaCount: Int) {
        rng = SplitMix64(seed: seed)
        collecting = (1...replicaCount).map { Replica(nodeID: .node(UInt64($0))) }
        twins = collecting
        ledgers = Array(repeating: StabilityLedger(), count: replicaCount)
        reports = Array(repeating: Array(repeating: VersionVector(), count: replicaCount), count: replicaCount)
        reportedAt = Array(repeating: Array(repeating: 0, count: replicaCount), count: replicaCount)
        walls = (0..<replicaCount).map { _ in 1_700_000_000_000 }
        for i in walls.indices where rng.chance(30) { walls[i] -= 3_600_000 }
        side = Array(repeating: 0, count: replicaCount)
    }

    mutating func run(steps: Int) {
        for _ in 0..<steps { step() }
        side = side.map { _ in 0 }
        for _ in 0..<2 {
            exchangeAll()
            for r in collecting.indices { collect(r) }
        }
        exchangeAll()
        check()
    }

    mutating func step() {
        for i in walls.indices { walls[i] += UInt64.random(in: 0...60, using: &rng) }
        let roll = Int.random(in: 0..<100, using: &rng)
        if roll < 50 {
            edit(Int.random(in: 0..<collecting.count, using: &rng))
        } else if roll < 80 {
            let a = Int.random(in: 0..<collecting.count, using: &rng)
            let b = Int.random(in: 0..<collecting.count, using: &rng)
            if a != b, side[a] == side[b] { exchange(a, b) }
        } else if roll < 90 {
            collect(Int.random(in: 0..<collecting.count, using: &rng))
        } else if roll < 95 {
            for i in walls.indices { walls[i] += 3 * 3_600_000 }
            log.append("three hours pass")
        } else {
            side = side.map { _ in rng.chance(50) ? 0 : 1 }
            log.append("partition \(side)")
        }
    }

    mutating func edit(_ r: Int) {
        let id = ItemID.named("i\(Int.random(in: 0..<8, using: &rng))")
        let item = twins[r].items[id]
        let edit: ItemEdit
        if item?.exists != true {
            edit = .create(type: "task", assignments: [.set(.named("a"), .integer(Int64(rng.next() % 100)))])
        } else {
            let roll = Int.random(in: 0..<100, using: &rng)
            if roll < 25 {
                edit = .delete
            } else if roll < 40 {
                edit = .restore
            } else {
                let field = rng.pick(Self.fields)
                edit = .update([
                    field.rawValue == "tags"
                        ? .add(field, .integer(Int64(rng.next() % 5))) : .set(field, .integer(Int64(rng.next() % 100)))
                ])
            }
        }
        let twinResult = Result { () throws(EditError) in
            try twins[r].apply(edit, to: id, wallMilliseconds: walls[r], trashWindow: Self.trashWindow)
        }
        let result = Result { () throws(EditError) in
            try collecting[r].apply(edit, to: id, wallMilliseconds: walls[r], trashWindow: Self.trashWindow)
        }
        switch (twinResult, result) {
        case (.success(let a), .success(let b)) where a == b:
            log.append("r\(r) \(a) \(id) \(edit)")
        case (.failure, .failure): break
        default:
            problems.append("r\(r) \(edit) on \(id): the twin says \(twinResult), the collecting replica \(result)")
        }
    }

    mutating func exchange(_ a: Int, _ b: Int) {
        for (from, to) in [(a, b), (b, a)] {
            for batch in collecting[from].delta(for: collecting[to].versionVector) {
                collecting[to].apply(batch, wallMilliseconds: walls[to])
            }
            for batch in twins[from].delta(for: twins[to].versionVector) {
                twins[to].apply(batch, wallMilliseconds: walls[to])
            }
        }
        // The hellos: each learns the other's vector, and the reports it gossips.
        for (me, other) in [(a, b), (b, a)] {
            reports[me][me] = collecting[me].versionVector
            reportedAt[me][me] = walls[me]
            reports[me][other] = collecting[other].versionVector
            reportedAt[me][other] = max(reportedAt[me][other], walls[me])
        }
        for (me, other) in [(a, b), (b, a)] {
            for k in reports.indices {
                reports[me][k].join(reports[other][k])
                reportedAt[me][k] = max(reportedAt[me][k], reportedAt[other][k])
            }
        }
        log.append("sync r\(a)<->r\(b)")
    }

    mutating func exchangeAll() {
        for _ in 0..<3 {
            for a in collecting.indices {
                for b in collecting.indices where a < b { exchange(a, b) }
            }
        }
    }

    mutating func collect(_ r: Int) {
        reports[r][r] = collecting[r].versionVector
        reportedAt[r][r] = walls[r]
        ledgers[r].observe(reports[r], reportedAt: reportedAt[r].min()!, now: walls[r])
        let before = collecting[r].collected
        let n = collecting[r].collect(
            below: ledgers[r].stable,
            deletedBefore: min(walls[r], ledgers[r].stableReportedAt) &- Self.trashWindow &- Self.margin
        )
        if n > 0 {
            collectedCount += n
            everCollected.formUnion(collecting[r].collected.subtracting(before))
            log.append("r\(r) collects \(n) below \(ledgers[r].stable)")
        }
    }

    mutating func check() {
        func shown(_ replica: Replica) -> [ItemID: ItemView?] {
            var result: [ItemID: ItemView?] = [:]
            for (id, item) in replica.items { result[id] = item.isDeleted ? .some(nil) : item.view }
            return result
        }
        for r in collecting.indices {
            if shown(collecting[r]) != shown(twins[r]) {
                problems.append("r\(r) shows \(shown(collecting[r])) but its twin \(shown(twins[r]))")
            }
            if shown(collecting[r]) != shown(collecting[0]) {
                problems.append("r\(r) and r0 differ after a complete exchange")
            }
            for id in everCollected where collecting[r].items[id]?.isDeleted != true {
                problems.append("\(id) was collected somewhere but is live on r\(r)")
            }
        }
    }
}
