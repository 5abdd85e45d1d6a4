import ArgumentParser
import LansyncSimulation

/// Runs the simulated cluster's scenarios at the sizes issue 33 asks for and prints one line per
/// run, then a summary per scenario and size: `swift run -c release sim-bench` in Benchmarks/.
@main
struct SimBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The deterministic cluster simulation at scale: rounds, duplicates, messages, sessions."
    )

    @Option(help: "Cluster sizes, comma-separated.")
    var sizes = "50,200,1000"

    @Option(help: "Seeds per scenario and size (the first is 1; a failure prints its seed).")
    var seeds = 1

    @Option(help: "Scenarios, comma-separated (steady, churn, partition, loss).")
    var scenarios = Scenario.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: "Tracked changes per run.")
    var changes = 20

    @Option(help: "Replay one seed only.")
    var seed: UInt64?

    @Option(help: "The machines' graft-ahead threshold in milliseconds (default: theirs).")
    var graftAhead: Int?

    @Option(help: "The machines' graft delay in milliseconds (default: theirs).")
    var graftDelay: Int?

    @Option(
        help:
            "Within how many hops of its origin a change goes over every session (default: as nodes pick it; 0: no hop counts)."
    )
    var flood: Int?

    mutating func run() throws {
        var failed: [String] = []
        for size in sizes.split(separator: ",").compactMap({ Int($0) }) {
            for name in scenarios.split(separator: ",") {
                guard let scenario = Scenario(rawValue: String(name)) else {
                    throw ValidationError("no scenario \(name): steady, churn, partition or loss")
                }
                var reports: [SimulationReport] = []
                let clock = ContinuousClock()
                let start = clock.now
                for s in seed.map({ [$0] }) ?? (1...UInt64(seeds)).map({ $0 }) {
                    var config = Simulation.Config(nodes: size, seed: s)
                    config.graftAhead = graftAhead.map { .milliseconds($0) }
                    config.graftDelay = graftDelay.map { .milliseconds($0) }
                    config.flood = flood
                    let report = Simulation.run(scenario, config, changes: changes)
                    if seeds <= 3 || !report.converged || !report.faults.isEmpty { print(report) }
                    if !report.converged || !report.faults.isEmpty { failed.append("\(scenario) n=\(size) seed=\(s)") }
                    reports.append(report)
                }
                let rounds = reports.map(\.roundsMedian).sorted()
                let afterHeal = reports.compactMap(\.roundsAfterHeal).sorted()
                let dups = reports.map(\.duplicatesPerNode).reduce(0, +) / Double(reports.count)
                let messages = reports.map(\.messagesPerChange).reduce(0, +) / Double(reports.count)
                let sessions = reports.map(\.sessionsMax).max() ?? 0
                print(
                    "SUMMARY \(scenario) n=\(size): \(reports.filter(\.converged).count)/\(reports.count) converged, "
                        + "rounds median \(rounds[rounds.count / 2])"
                        + (afterHeal.isEmpty ? "" : " (after the heal \(afterHeal[afterHeal.count / 2]))")
                        + ", duplicates/node/change \(dups), "
                        + "messages/change \(messages), max sessions/node \(sessions), wall \(clock.now - start)"
                )
            }
        }
        if !failed.isEmpty {
            print("FAILED: \(failed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }
}
