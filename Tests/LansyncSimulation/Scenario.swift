/// The scenarios a simulated cluster goes through (Docs/SCALE.md, "The simulation"). Each starts
/// every node, lets the views settle, makes changes under its condition, then lifts the condition
/// and checks that every member that is up converges.
public enum Scenario: String, Sendable, CaseIterable {
    /// Edits at random nodes, nothing failing: the figures of steady state.
    case steady
    /// Edits while 5% of the nodes crash and restart, 5% join and 2% leave.
    case churn
    /// Edits on both sides of a partition into halves, held for longer than a session's idle
    /// timeout, then healed.
    case partition
    /// Edits over a network that loses 5% of segments.
    case loss
}

/// What one run of a scenario measured.
public struct SimulationReport: Sendable, CustomStringConvertible {
    public var scenario: Scenario
    public var nodes: Int
    public var seed: UInt64
    /// How long after the condition was lifted every member that was up held the same replica;
    /// nil if they did not within the run's limit.
    public var settledAfter: Duration?
    public var changes: Int
    /// The deepest hop each change reached a node at: median and maximum over changes.
    public var roundsMedian: Int
    public var roundsMax: Int
    /// For a healed partition: the deepest hop each change reached a node at, counted from the
    /// nodes that held it when the partition healed (the rounds the heal took); median over
    /// changes. Nil for the other scenarios.
    public var roundsAfterHeal: Int?
    /// How long a change took to reach every node it reached: p50 and p99 over all deliveries.
    public var reachP50: Duration
    public var reachP99: Duration
    /// How long a change took to reach the last node it reached: p50 and p99 over changes.
    public var lastP50: Duration
    public var lastP99: Duration
    /// Deliveries of a change to a node after its first, per change and node.
    public var duplicatesPerNode: Double
    /// Messages of every kind sent while the changes spread, per change.
    public var messagesPerChange: Double
    /// View sessions per member that is up, at the end: mean and maximum.
    public var sessionsMean: Double
    public var sessionsMax: Int
    public var antiEntropySessions: Int
    /// Deliveries of a change over a session that had carried it to the same node already.
    public var resentInSession: Int
    /// `prune`, `graft` and `have` messages sent while the changes spread.
    public var prunes = 0
    public var grafts = 0
    public var haves = 0
    public var faults: [String]

    public var converged: Bool { settledAfter != nil }

    public var description: String {
        let settled = settledAfter.map { "settled in \(Self.ms($0)) ms" } ?? "DID NOT CONVERGE"
        return
            "\(scenario.rawValue) n=\(nodes) seed=\(seed): \(settled); \(changes) changes, rounds median \(roundsMedian) max \(roundsMax)\(roundsAfterHeal.map { " (after the heal \($0))" } ?? ""), "
            + "reach p50 \(Self.ms(reachP50)) ms p99 \(Self.ms(reachP99)) ms, last p50 \(Self.ms(lastP50)) ms p99 \(Self.ms(lastP99)) ms, "
            + "duplicates/node/change \(Self.fixed(duplicatesPerNode)), messages/change \(Self.fixed(messagesPerChange)), "
            + "sessions/node mean \(Self.fixed(sessionsMean)) max \(sessionsMax), anti-entropy sessions \(antiEntropySessions), resent in a session \(resentInSession), prunes \(prunes), grafts \(grafts), haves \(haves)"
            + (faults.isEmpty ? "" : "; FAULTS: \(faults.prefix(3))")
    }

    static func ms(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }
    static func fixed(_ x: Double) -> String { String(Double(Int((x * 100).rounded())) / 100) }
}

extension Simulation {
    /// Runs `scenario` on a cluster of `config.nodes` nodes and reports what it measured.
    public static func run(_ scenario: Scenario, _ config: Config, changes: Int = 20) -> SimulationReport {
        var config = config
        if scenario == .loss { config.loss = 0.05 }
        var sim = Simulation(config)
        for n in 0..<config.nodes {
            sim.start(n)
            sim.run(for: .milliseconds(Int64(2000 / max(1, config.nodes))))
        }
        sim.run(for: .seconds(30))
        sim.resetCounters()
        switch scenario {
        case .steady, .loss:
            for _ in 0..<changes {
                if let n = sim.randomLiveNode() { sim.edit(n) }
                sim.run(for: .milliseconds(500))
            }
        case .churn: sim.churn(changes: changes)
        case .partition:
            let half = config.nodes / 2
            sim.partition { $0 < half ? 0 : 1 }
            for i in 0..<changes {
                if let n = sim.randomLiveNode() { sim.edit(n, shared: i % 4 == 3) }
                sim.run(for: .seconds(1))
            }
            sim.run(for: .seconds(90))
            sim.heal()
        }
        let settled = sim.runUntilConverged(timeout: .seconds(600))
        return sim.report(scenario, settledAfter: settled)
    }

    /// Over `changes` seconds: an edit a second, crashes and restarts (5% of the nodes down at a
    /// time at most), joins (5% more nodes) and leaves (2%); then every crashed node restarts.
    mutating func churn(changes: Int) {
        let size = nodeCount
        let joins = max(1, size / 20)
        let leaves = max(1, size / 50)
        var down: [(node: Int, until: Duration)] = []
        for second in 0..<changes {
            if let n = randomLiveNode() { edit(n, shared: second % 5 == 4) }
            if down.count < max(1, size / 20), let n = randomLiveNode() {
                crash(n)
                down.append((n, now + jitter(.seconds(10))))
            }
            for (n, until) in down where until <= now { restart(n) }
            down.removeAll { $0.until <= now }
            if second % max(1, changes / joins) == 0 { start(nodeCount) }
            if second % max(1, changes / leaves) == 1, let n = randomLiveNode(from: 1) {
                leave(n)
            }
            run(for: .seconds(1))
        }
        for (n, _) in down { restart(n) }
        _ = size
    }

    func report(_ scenario: Scenario, settledAfter: Duration?) -> SimulationReport {
        let changes = tracked.values
        let deepest = changes.map(\.deepest).sorted()
        let afterHeal = changes.compactMap(\.deepestAfterHeal).sorted()
        let reach = changes.flatMap(\.reached).sorted()
        let last = changes.compactMap { $0.reached.max() }.sorted()
        let first = changes.reduce(0) { $0 + $1.reached.count }
        let all = changes.reduce(0) { $0 + $1.deliveries }
        let sessions = sessionsPerNode
        return SimulationReport(
            scenario: scenario,
            nodes: config.nodes,
            seed: config.seed,
            settledAfter: settledAfter,
            changes: changes.count,
            roundsMedian: deepest.isEmpty ? 0 : deepest[deepest.count / 2],
            roundsMax: deepest.last ?? 0,
            roundsAfterHeal: afterHeal.isEmpty ? nil : afterHeal[afterHeal.count / 2],
            reachP50: reach.isEmpty ? .zero : reach[reach.count / 2],
            reachP99: reach.isEmpty ? .zero : reach[min(reach.count - 1, reach.count * 99 / 100)],
            lastP50: last.isEmpty ? .zero : last[last.count / 2],
            lastP99: last.isEmpty ? .zero : last[min(last.count - 1, last.count * 99 / 100)],
            duplicatesPerNode: first == 0 ? 0 : Double(all - first) / Double(first),
            messagesPerChange: changes.isEmpty ? 0 : Double(counters.messages) / Double(changes.count),
            sessionsMean: sessions.isEmpty ? 0 : Double(sessions.reduce(0, +)) / Double(sessions.count),
            sessionsMax: sessions.max() ?? 0,
            antiEntropySessions: counters.antiEntropySessions,
            resentInSession: counters.resentInSession,
            prunes: counters.prunes,
            grafts: counters.grafts,
            haves: counters.haves,
            faults: faults
        )
    }
}
