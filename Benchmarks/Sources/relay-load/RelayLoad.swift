import ArgumentParser
import BenchProcess
import Foundation
import Glibc
import LansyncCore
import LansyncIdentity
import LansyncNode
import LansyncTransport
import NIOCore
import NIOPosix

/// W10 (issue 34): how many members one relay process serves, and how fast a change reaches the
/// others through it. Starts the release `lansync relay` (one, or two that peer with each other
/// and split the members), then simulated members in this process, each a real mutual-TLS session
/// with a certificate the cluster's authority issued (``Member``); every member edits its own item
/// every `--interval` seconds for `--duration` seconds.
@main
struct RelayLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-load",
        abstract: "W10: simulated members over real TLS sessions against the release lansync relay."
    )

    @Option(help: "The release lansync binary.") var lansync: String
    @Option(help: "Simulated members.") var members = 1000
    @Option(help: "Seconds between two edits of one member.") var interval = 5.0
    @Option(help: "Seconds of edits.") var duration = 60.0
    @Option(
        help:
            "Relay processes (1, or 2 each serving half the members: with --store sqlite two relays peering with each other, with --store postgres two processes on one replica)."
    )
    var relays = 1
    @Option(
        help:
            "Where the relay keeps its replica: sqlite (its data directory), or postgres (a PostgreSQL server of the run's own, `lansync relay --store`, issue 34)."
    )
    var store = "sqlite"
    @Option(help: "Event-loop threads of the members' side.") var threads = 1
    @Option(help: "Scratch directory (emptied first).") var work = "/tmp/relay-load"
    @Option(help: "The first relay's loopback port.") var port = 27_420
    @Option(
        help:
            "Print every delivery slower than this many milliseconds (origin, edit, receiver, when made and when held): where a tail comes from."
    )
    var reportSlower: Int?

    func validate() throws {
        guard (1...2).contains(relays) else { throw ValidationError("--relays is 1 or 2") }
        guard ["sqlite", "postgres"].contains(store) else { throw ValidationError("--store is sqlite or postgres") }
        guard members >= 2 else { throw ValidationError("--members must be at least 2") }
        guard interval > 0, duration > 0 else { throw ValidationError("--interval and --duration must be positive") }
    }

    func run() async throws {
        try? FileManager.default.removeItem(atPath: work)
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let clusterFile = work + "/cluster.pem"
        try RelayProcess.run([lansync, "cluster", "create", clusterFile])
        let server = store == "postgres" ? try PostgresServer(work: work, port: port + 10) : nil
        defer { server?.stop() }
        var started: [RelayProcess] = []
        defer { for relay in started { relay.stop() } }
        for r in 0..<relays {
            // On PostgreSQL the second process is a copy of the first's directory on the same
            // replica (one relay to the cluster); on SQLite a relay of its own that peers.
            let shared = server.map { ["--store", $0.uri, "--authority", $0.uri] } ?? []
            started.append(
                try RelayProcess(
                    lansync: lansync,
                    work: work,
                    cluster: clusterFile,
                    name: "relay\(r + 1)",
                    port: port + r,
                    peers: r == 0 || server != nil ? [] : [port],
                    maxSessions: members + 16,
                    copyOf: server != nil ? started.first : nil,
                    extra: shared
                )
            )
        }
        let secret = try ClusterSecret(pem: try String(contentsOfFile: clusterFile, encoding: .utf8))
        let clusterPEM = try secret.certificatePEM()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        say("issuing \(members) member certificates ...")
        let deliveries = Deliveries(members: members, reportSlower: reportSlower.map { .milliseconds($0) })
        let counters = LoadCounters()
        let schedule = EditSchedule(members: members, interval: .milliseconds(Int(interval * 1000)))
        var crowd: [Member] = []
        for i in 0..<members {
            let node = try secret.issueNode(name: "m\(i)")
            let identity = try TLSIdentity(nodePEM: try node.pem(), clusterPEM: clusterPEM)
            crowd.append(
                Member(
                    index: i,
                    transport: try Transport(identity: identity, group: group),
                    clusterID: secret.clusterID,
                    nodeID: node.nodeID,
                    deliveries: deliveries,
                    counters: counters
                )
            )
        }
        let figures = try await withThrowingTaskGroup(of: Void.self) { tasks in
            let connecting = ContinuousClock.now
            for member in crowd {
                let relayPort = started[member.index % relays].port
                tasks.addTask {
                    // A relay takes at most 8 handshakes from one address at a time: a ramp.
                    try await Task.sleep(for: .milliseconds(4 * member.index))
                    await member.run(relay: ("127.0.0.1", relayPort), schedule: schedule)
                }
            }
            let held = try await waitForSessions(counters, since: connecting)
            let cpuBefore = started.map(\.cpuSeconds)
            let serverBefore = server?.cpuSeconds
            let selfBefore = ProcessFigures.cpuSeconds(getpid())
            let begun = ContinuousClock.now
            schedule.begin(at: begun, editsFor: .milliseconds(Int(duration * 1000)), drain: .seconds(15))
            say("editing for \(duration) s, every member every \(interval) s ...")
            try await Task.sleep(until: schedule.editsEnd)
            let cpu = zip(started.map(\.cpuSeconds), cpuBefore).map { $0 - $1 }
            let serverCPU = server.flatMap { s in serverBefore.map { s.cpuSeconds - $0 } }
            let selfCPU = ProcessFigures.cpuSeconds(getpid()) - selfBefore
            let rss = started.map(\.rss)
            try await tasks.waitForAll()
            return Figures(
                held: held,
                relayCPU: cpu,
                serverCPU: serverCPU,
                memberCPU: selfCPU,
                relayRSS: rss,
                seconds: duration
            )
        }
        report(figures, deliveries.summary, counters.now, relays: started)
        try await group.shutdownGracefully()
    }

    /// Waits until every member's session is up to date with its relay (or two minutes pass);
    /// returns how many were and how long it took.
    private func waitForSessions(
        _ counters: LoadCounters,
        since: ContinuousClock.Instant
    ) async throws -> (
        Int, Duration
    ) {
        let deadline = since + .seconds(120)
        while counters.now.upToDate < members, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let took = ContinuousClock.now - since
        say("sessions up to date: \(counters.now.upToDate) of \(members) after \(took)")
        return (counters.now.upToDate, took)
    }

    struct Figures {
        var held: (Int, Duration)
        var relayCPU: [Double]
        /// PostgreSQL's processes, with `--store postgres`.
        var serverCPU: Double?
        var memberCPU: Double
        var relayRSS: [(now: Int, peak: Int)]
        var seconds: Double
    }

    private func report(_ f: Figures, _ d: Deliveries.Summary, _ c: LoadCounters.Values, relays: [RelayProcess]) {
        func ms(_ v: Double?) -> String { v.map { String(format: "%.1f", $0) } ?? "-" }
        let perHundred = Double(members) / 100
        let mib = { (b: Int) in String(format: "%.0f", Double(b) / 1_048_576) }
        print(
            """

            W10 \(members) members, \(relays.count) relay process\(relays.count == 1 ? "" : "es") on \(store), \
            an edit per member every \(interval) s for \(duration) s
            | figure | value |
            |---|---:|
            | sessions up to date before the edits | \(f.held.0) of \(members) (after \(f.held.1)) |
            | most sessions up to date at once | \(c.mostUpToDate) |
            | connects / failed / sessions lost (once editing) | \(c.connects) / \(c.connectFailures) / \(c.sessionsLost) \
            (\(c.lostWhileEditing)) |
            | changes made | \(d.changes) (\(String(format: "%.1f", Double(d.changes) / f.seconds))/s) |
            | deliveries (a change in another member's replica) | \(d.delivered) of \(d.expected) \
            (\(String(format: "%.0f", Double(d.delivered) / f.seconds))/s) |
            | a change to one member, p50 / p99 / max (ms) | \(ms(d.oneMember.quantile(0.5))) / \
            \(ms(d.oneMember.quantile(0.99))) / \(ms(Double(d.oneMember.max.components.seconds) * 1000 + Double(d.oneMember.max.components.attoseconds) / 1e15)) |
            | a change to every other member, p50 / p99 (ms) | \(ms(d.everyMember.quantile(0.5))) / \
            \(ms(d.everyMember.quantile(0.99))) (\(d.everyMember.count) of \(d.changes) changes reached all) |
            | relay CPU (s per s of edits) | \(f.relayCPU.map { String(format: "%.2f", $0 / f.seconds) }.joined(separator: " + ")) |
            | relay CPU per 100 members (ms per s) | \(f.relayCPU.map { String(format: "%.1f", $0 / f.seconds * 1000 / perHundred) }.joined(separator: " + ")) |
            | relay RSS now / peak (MiB) | \(f.relayRSS.map { "\(mib($0.now)) / \(mib($0.peak))" }.joined(separator: ", ")) |
            | relay RSS per 100 members (MiB) | \(f.relayRSS.map { String(format: "%.1f", Double($0.now) / 1_048_576 / perHundred) }.joined(separator: " + ")) |
            | PostgreSQL's CPU (s per s of edits) | \(f.serverCPU.map { String(format: "%.2f", $0 / f.seconds) } ?? "-") |
            | members' process CPU (s per s) | \(String(format: "%.2f", f.memberCPU / f.seconds)) |
            | refused batches / edits, connection errors | \(c.refusedBatches) / \(c.refusedEdits), \(c.connectionErrors) |
            """
        )
        for (reason, count) in c.reasons.sorted(by: { $0.value > $1.value }) { print("  \(count) × \(reason)") }
    }
}

/// A progress line, on stderr at once (stdout is for the report, and buffered when piped).
func say(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
