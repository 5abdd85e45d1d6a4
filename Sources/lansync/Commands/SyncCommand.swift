import ArgumentParser
import LansyncHost

/// `lansync sync`: one-shot exchange with peers.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Exchange everything with each --peer once, then exit.",
        discussion:
            "Exits 0 when this replica and every peer are up to date with each other; otherwise non-zero, with a line per peer that failed."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(name: .customLong("peer"), help: ArgumentHelp("A node to sync with (repeatable).", valueName: "HOST:PORT"))
    var peers: [PeerAddress] = []
    @Flag(help: "Print a JSON array: per peer, ok, node_id, name, sent and received (or error).") var json = false
    @Option(help: "Give up on a peer after this many seconds.")
    var timeout: Double = 60

    func validate() throws {
        guard !peers.isEmpty else { throw ValidationError("give at least one --peer HOST:PORT") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    /// One line: a bar and the count against the peer's announced total while its delta runs
    /// (a 1.2 peer announces a large one), else the counts so far.
    static func progressLine(peer: String, _ p: SyncProgress) -> String {
        let counts = "sent \(p.counters.sentUpdates), \(p.counters.receivedBytes / 1000) KB in"
        guard let expected = p.expecting, expected > 0 else {
            return "syncing with \(peer): received \(p.counters.receivedUpdates) field states, \(counts)"
        }
        let done = min(1, Double(p.receivedOfExpected) / Double(expected))
        let width = 24
        let filled = Int(done * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "syncing with \(peer) [\(bar)] \(Int(done * 100))%: received "
            + "\(Render.grouped(p.receivedOfExpected)) of ~\(Render.grouped(expected)) field states, \(counts)"
    }

    func run() async throws {
        let showProgress = Terminal.stderrIsTerminal
        let results = try await data.directory.syncOnce(with: peers, timeout: .milliseconds(Int(timeout * 1000))) {
            peer,
            progress in
            guard showProgress else { return }
            Terminal.redrawLine(Self.progressLine(peer: peer.description, progress))
        }
        // Clear the progress line before the summary.
        if showProgress { Terminal.redrawLine("") }
        // One line (or JSON object) per peer, in the order given; a failure still exits non-zero.
        let failures = results.filter { !$0.succeeded }.map { "\($0.peer): \($0.error ?? "failed")" }
        if json {
            print(results.jsonText)
        } else {
            for result in results where result.succeeded {
                print(
                    Render.line(
                        "synced with \(result.name ?? "") (\(result.nodeID?.short ?? "?")) at \(result.peer): sent \(result.counters.sentUpdates), received \(result.counters.receivedUpdates) field states"
                    )
                )
            }
        }
        if !failures.isEmpty { throw CLIError("sync failed with " + failures.joined(separator: "; ")) }
    }
}
