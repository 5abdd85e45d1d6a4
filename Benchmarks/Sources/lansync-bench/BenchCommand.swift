import ArgumentParser
import BenchSQLite
import Foundation
import Glibc

/// `lansync-bench`: runs the workloads of Docs/BENCHMARKS.md against the release `lansync`
/// binary on loopback (and in the mDNS lab for W6), beside Syncthing and the machine's limits,
/// and prints the table (also written as Markdown and JSON).
@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lansync-bench",
        abstract: "Measure lansync as a user feels it, beside Syncthing and this machine's limits.",
        discussion:
            "Run it through scripts/bench.sh, which installs what is missing and builds lansync in release mode first."
    )

    @Option(help: "The lansync binary to measure (a release build).") var lansync: String
    @Option(help: "The lansync checkout (for scripts/lab.sh).") var repo: String
    @Option(help: "Where to write latest.json and latest.md.") var out: String
    @Option(help: "Runs of each workload (the median and spread are over these).") var runs = 3
    @Option(help: "W1's items, and the larger replica of W2 and W4.") var items = 100_000
    @Option(help: "Items in Syncthing's W1 (one file each), and in lansync's W1 run beside it.") var syncthingItems =
        5_000
    @Option(help: "Edits timed in Syncthing's W5 (each takes over a second).") var syncthingEdits = 25
    @Option(help: "Edits timed in lansync's W5.") var edits = 300
    @Option(help: "Workloads to run, comma-separated, from W1,W2,W3,W4,W5,W6,W7,W8,CLI,syncthing,limits.") var only =
        "W1,W2,W3,W4,W5,W6,W7,W8,CLI,syncthing,limits"
    @Flag(help: "A smoke run: small sizes and 2 runs, to check the runner itself.") var quick = false
    @Flag(help: "Keep the scratch directory.") var keep = false

    func run() throws {
        let started = now()
        signal(SIGPIPE, SIG_IGN)
        let settings = Settings(
            runs: quick ? 2 : runs,
            items: quick ? 10_000 : items,
            smallItems: quick ? 2_000 : 10_000,
            conflicts: quick ? 2_000 : 10_000,
            incrementalEdits: quick ? [1, 100, 1_000] : [1, 100, 10_000],
            visibilityEdits: quick ? 50 : edits,
            syncthingItems: quick ? 300 : syncthingItems,
            syncthingEdits: quick ? 5 : syncthingEdits,
            idleWindow: quick ? 3 : 5,
            workloads: Set(only.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }),
            repo: repo
        )
        let work = "/tmp/lansync-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(atPath: work) } }
        let binary = try Lansync(binary: lansync, work: work, basePort: 27400)
        let date = ISO8601DateFormatter().string(from: Date())
        let report = Report(
            date: date,
            machine: .current(),
            lansyncVersion: binary.version,
            syncthingVersion: nil,
            settings: [
                "runs": String(settings.runs), "items": String(settings.items),
                "small_items": String(settings.smallItems), "quick": String(quick), "only": only,
            ]
        )
        let bench = Bench(settings: settings, lansync: binary, report: report)
        print("lansync-bench: \(report.machine.line); scratch \(work)")

        if settings.wants("W1") {
            bench.section("W1 initial sync: \(settings.items.grouped) items × 10 fields to an empty node")
            try bench.initialSync(items: settings.items, runs: settings.runs, record: true)
        }
        if settings.wants("W2") {
            bench.section("W2 incremental: K edits into replicas of M items")
            try bench.incremental()
        }
        if settings.wants("W3") {
            bench.section("W3 conflicts")
            try bench.conflicts()
        }
        if settings.wants("W4") {
            bench.section("W4 idle anti-entropy")
            try bench.idle()
        }
        if settings.wants("W5") {
            bench.section("W5 edit-to-visibility")
            try bench.visibility()
        }
        if settings.wants("W6") {
            bench.section("W6 discovery in the mDNS lab")
            try bench.discovery()
        }
        if settings.wants("W7") {
            bench.section("W7 list edits: one addition and one removal in lists of 100, 1,000 and 10,000 elements")
            try bench.listEdits()
        }
        if settings.wants("W8") {
            bench.section("W8 local API: the change feed's latency and its clients, queries")
            try bench.localAPI()
        }
        if settings.wants("CLI") {
            bench.section("CLI: one command, process start to exit, beside sqlite3")
            try bench.commandLine()
        }
        if settings.wants("syncthing") {
            try bench.syncthing()
        }
        if settings.wants("limits") {
            bench.section("Limits: plain SQLite and loopback TCP")
            try bench.limits()
        }

        bench.section("report")
        bench.report.seconds = now() - started
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf",
            negativeInfinity: "-inf",
            nan: "nan"
        )
        try encoder.encode(bench.report).write(to: URL(fileURLWithPath: out + "/latest.json"))
        try bench.report.markdown.write(toFile: out + "/latest.md", atomically: true, encoding: .utf8)
        print("\n" + bench.report.markdown)
        print("written: \(out)/latest.json, \(out)/latest.md")
    }
}
