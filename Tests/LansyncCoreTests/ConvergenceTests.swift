import LansyncCore
import LansyncJSON
import LansyncTestLane
import LansyncTestSupport
import PropertyBased
import Testing

/// Tier 1 of the brief: random histories of 2–7 replicas with random edits and lossy, duplicated,
/// interrupted and reordered exchanges must converge without losing an acknowledged write.
///
/// Each case is `(seed, replicas, steps)`; a failure prints them and PropertyBased's fixed seed,
/// and shrinks towards fewer replicas and steps. Replay one with
/// `LANSYNC_REPLAY=seed,replicas,steps swift test --filter replay`.
@Suite(.computeBound) struct ConvergenceTests {
    static let histories = Gen.uint64(in: 0 ... .max)
    static let replicaCounts = Gen.int(in: 2...7)
    static let stepCounts = Gen.int(in: 1...70)

    @Test func randomHistoriesConverge() async {
        await propertyCheck(
            count: propertyCases(default: 2500),
            input: Self.histories,
            Self.replicaCounts,
            Self.stepCounts
        ) { seed, replicas, steps in
            Self.check(seed: seed, replicas: replicas, steps: steps)
        }
    }

    /// Histories that once failed, kept as regressions.
    @Test(arguments: [
        (UInt64(1), 2, 10), (UInt64(42), 7, 70), (UInt64(0xDEAD_BEEF), 3, 40),
    ])
    func regressionHistories(seed: UInt64, replicas: Int, steps: Int) {
        Self.check(seed: seed, replicas: replicas, steps: steps)
    }

    @Test func replay() throws {
        guard let spec = getenvString("LANSYNC_REPLAY") else {
            print("replay: set LANSYNC_REPLAY=seed,replicas,steps to replay one history; nothing to replay")
            return
        }
        let parts = spec.split(separator: ",").compactMap { UInt64($0) }
        try #require(parts.count == 3, "LANSYNC_REPLAY must be seed,replicas,steps")
        Self.check(seed: parts[0], replicas: Int(parts[1]), steps: Int(parts[2]))
    }

    static func check(seed: UInt64, replicas: Int, steps: Int) {
        var history = History(seed: seed, replicaCount: replicas)
        history.run(steps: steps)
        let problems =
            Invariants.converged(history) + Invariants.noWriteLost(history) + Invariants.rollbacksHarmless(history)
        #expect(
            problems.isEmpty,
            "\(problems.prefix(5).joined(separator: "\n"))\nreplay: LANSYNC_REPLAY=\(seed),\(replicas),\(steps)\n\(history.replayHint)"
        )
    }
}
