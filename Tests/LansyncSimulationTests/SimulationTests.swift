import LansyncCore
import LansyncNode
import LansyncSimulation
import LansyncTestLane
import LansyncTestSupport
import Testing

/// Short runs of the simulated cluster (issue 33): every scenario converges, views stay bounded,
/// and a run replays from its seed. The long runs (200 and 1,000 nodes, many seeds) are
/// `sim-bench` in Benchmarks/.
///
/// Serialized: each test computes for seconds without a suspension point, on a thread of Swift's
/// cooperative pool, which has two threads on CI's 2-core machine. Run side by side they held
/// both, and every other test's awaits (the integration tests' `lansync status` calls) stalled
/// together for 25 s (CI run 72); one at a time, they leave the other thread to the rest.
@Suite(.serialized, .computeBound) struct SimulationTests {
    /// Seeds from `LANSYNC_SIM_SEEDS` (a count) when set, else a few: the same scenarios, more
    /// histories.
    static let seeds: [UInt64] = (1...UInt64(propertyCases(default: 3))).map { $0 &* 7919 }

    @Test(arguments: Scenario.allCases)
    func everyScenarioConvergesWithBoundedViews(_ scenario: Scenario) {
        for seed in Self.seeds {
            let report = Simulation.run(scenario, Simulation.Config(nodes: 40, seed: seed), changes: 20)
            print(report)
            #expect(report.converged, "\(report)")
            #expect(report.faults.isEmpty, "\(report)")
            let limits = PeerView.Limits()
            #expect(report.sessionsMax <= limits.active + limits.slack, "\(report)")
            #expect(report.sessionsMean >= Double(limits.active) - 1, "views fill: \(report)")
        }
    }

    /// Every change reaches every node within a few hops when nothing fails, no session carries
    /// a change to the same node twice, and pruned sessions keep duplicates to about one per
    /// node (flooding over the same views delivers each change 4 to 5 times more: Docs/SCALE.md).
    @Test func changesSpreadInAFewHopsAndReachEachNodeAboutOnce() {
        let report = Simulation.run(.steady, Simulation.Config(nodes: 60, seed: 42), changes: 20)
        print(report)
        #expect(report.converged && report.changes == 20, "\(report)")
        #expect(report.roundsMedian <= 12, "\(report)")
        #expect(report.resentInSession == 0, "\(report)")
        #expect(report.duplicatesPerNode <= 2, "\(report)")
    }

    /// Near its origin a change goes over every session (protocol 1.11's hop counts), then down
    /// the tree: it enters the tree at many nodes instead of one, so it reaches the last node in
    /// fewer hops than over the tree alone, for at most two copies per node (Docs/SCALE.md). (A
    /// node floods from 400 members; 200 with a flood of 3 shows the same in a test's time.)
    @Test func aChangeFloodsNearItsOriginThenFollowsTheTree() {
        let tree = Simulation.run(.steady, Simulation.Config(nodes: 200, seed: 5), changes: 20)
        var withFlood = Simulation.Config(nodes: 200, seed: 5)
        withFlood.flood = 3
        let flooded = Simulation.run(.steady, withFlood, changes: 20)
        print(tree)
        print(flooded)
        #expect(tree.converged && flooded.converged)
        #expect(flooded.roundsMedian < tree.roundsMedian, "\(flooded) against \(tree)")
        #expect(flooded.roundsMedian <= 8, "\(flooded)")
        #expect(flooded.duplicatesPerNode <= 2, "\(flooded)")
        #expect(flooded.resentInSession == 0, "\(flooded)")
    }

    /// A cluster within ``PeerView/Limits/fullMeshUpTo`` keeps a session with every member, as
    /// before the view existed.
    @Test func aSmallClusterIsAFullMesh() {
        let report = Simulation.run(.steady, Simulation.Config(nodes: 6, seed: 3), changes: 5)
        #expect(report.converged, "\(report)")
        #expect(report.sessionsMax == 5 && report.sessionsMean == 5, "\(report)")
    }

    /// The same seed gives the same run, event for event.
    @Test func aRunReplaysFromItsSeed() {
        let first = Simulation.run(.churn, Simulation.Config(nodes: 30, seed: 11), changes: 10)
        let second = Simulation.run(.churn, Simulation.Config(nodes: 30, seed: 11), changes: 10)
        let other = Simulation.run(.churn, Simulation.Config(nodes: 30, seed: 12), changes: 10)
        #expect(first.description == second.description)
        #expect(first.description != other.description, "another seed, another history")
    }
}
