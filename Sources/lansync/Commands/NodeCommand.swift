public import ArgumentParser
import Foundation
import LansyncCore
import LansyncJSON
import LansyncDiscovery
public import LansyncNode
import LansyncStore
import LansyncTransport
import LansyncWire

/// Parses `HOST:PORT` arguments.
extension PeerAddress: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

/// `lansync node`: the long-running node.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Run this machine's node until SIGINT or SIGTERM.",
        discussion: """
            The node accepts peers on --listen, keeps a connection to every --peer (reconnecting with \
            backoff), pushes each change of the replica to connected peers at once, and exchanges \
            version vectors every 15 s to repair anything missed. Stop it with Ctrl-C or SIGTERM: it \
            finishes or abandons in-flight batches (each is one transaction) and exits 0.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: ArgumentHelp("Where to accept peers.", valueName: "HOST:PORT"))
    var listen = PeerAddress(host: "0.0.0.0", port: 7420)
    @Option(name: .customLong("peer"), help: ArgumentHelp("A peer to keep connected to (repeatable).", valueName: "HOST:PORT"))
    var peers: [PeerAddress] = []
    @Option(help: ArgumentHelp("The relay: carries changes to nodes this one never meets, and is the fallback when no direct peer is reachable.", valueName: "HOST:PORT"))
    var relay: PeerAddress?
    @Option(help: "While direct peers are connected, seconds between hand-overs to the relay.")
    var relayInterval: Double = 30
    @Flag(help: "Do not advertise or browse with mDNS (use only --peer and the relay).")
    var noMdns = false
    @Option(help: ArgumentHelp("Seconds between anti-entropy rounds.", visibility: .hidden))
    var antiEntropy: Double = 15

    func validate() throws {
        try validateInterval(relayInterval, "--relay-interval")
        try validateInterval(antiEntropy, "--anti-entropy")
    }

    func run() async throws {
        var options = NodeOptions(listen: listen, staticPeers: peers, controlSocketPath: data.directory.controlSocketPath)
        options.antiEntropyInterval = .milliseconds(Int(antiEntropy * 1000))
        if !noMdns { options.discovery = AvahiDiscovery() }
        options.relay = relay
        options.relayInterval = .milliseconds(Int(relayInterval * 1000))
        try await runNode(options, data: data)
    }
}

/// Runs a node (or the relay) on a data directory until SIGINT or SIGTERM.
func runNode(_ options: NodeOptions, data: DataDirectoryOptions) async throws {
    do {
        let directory = data.directory
        let store = try directory.open()
        let lock = try NodeLock(path: directory.path + "/node.lock")
        defer { lock.release() }
        // Damage is refused, never served: check the file before anything is read from it.
        let check: DamageReport
        do { check = try store.quickCheck() } catch { throw CLIError(error) }
        if let damage = store.damage ?? check.problems.first {
            throw CLIError(StoreError.corrupt(path: store.path, detail: damage).message + "; the node does not start on a damaged replica")
        }
        let identity = try directory.tlsIdentity()
        let node: Node
        do { node = try Node(options: options, store: store, identity: identity, log: Log.line) } catch { throw CLIError("\(error)") }
        let task = Task { try await node.run() }
        let signals = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        do {
            try await task.value
        } catch {
            throw CLIError("node stopped: \(error)")
        }
    }
}

extension SettlePolicy: ExpressibleByArgument {}

/// `lansync relay`: the designated node that carries changes and settles conflicts.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run this directory's node as the cluster's relay until SIGINT or SIGTERM.",
        discussion: """
            The relay is a full replica that every node can reach (a small server): it stores every             change, so nodes that are never online together still exchange their edits through it,             and it is the cluster's authority: when it holds concurrent values of a field it settles             them with its own write (--settle latest keeps the value every node already shows;             first-seen keeps the value that reached the relay first), and the losers stay in history.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: ArgumentHelp("Where to accept nodes.", valueName: "HOST:PORT"))
    var listen = PeerAddress(host: "0.0.0.0", port: 7420)
    @Option(help: "How to settle conflicts: latest or first-seen.")
    var settle: SettlePolicy = .latest
    @Flag(help: "Also advertise over mDNS (a relay is usually off the LAN).")
    var mdns = false
    @Option(help: "The largest field value the relay accepts, in bytes.")
    var maxValueBytes = Limits.maxValueBytes
    @Option(help: "The most fields an item may have.")
    var maxFields = Limits.maxFieldsPerItem
    @Option(help: "The most nodes served at once; more are told to retry later.")
    var maxSessions = 128
    @Option(help: ArgumentHelp("Seconds between anti-entropy rounds.", visibility: .hidden))
    var antiEntropy: Double = 15

    func validate() throws {
        // A zero or negative limit would make the relay overrule every change it is sent.
        guard maxValueBytes > 0 else { throw ValidationError("--max-value-bytes must be at least 1") }
        guard maxFields > 0 else { throw ValidationError("--max-fields must be at least 1") }
        guard maxSessions > 0 else { throw ValidationError("--max-sessions must be at least 1") }
        try validateInterval(antiEntropy, "--anti-entropy")
    }

    func run() async throws {
        var options = NodeOptions(listen: listen, staticPeers: [], controlSocketPath: data.directory.controlSocketPath)
        options.role = .relay
        options.settlePolicy = settle
        options.relayLimits = RelayLimits(maxValueBytes: maxValueBytes, maxFieldsPerItem: maxFields)
        options.maxSessions = maxSessions
        options.antiEntropyInterval = .milliseconds(Int(antiEntropy * 1000))
        if mdns { options.discovery = AvahiDiscovery() }
        try await runNode(options, data: data)
    }
}

/// An interval option in seconds: positive, finite, at most a day (it becomes whole milliseconds).
func validateInterval(_ seconds: Double, _ option: String) throws {
    guard seconds.isFinite, seconds > 0, seconds <= 86_400 else {
        throw ValidationError("\(option) must be a number of seconds above 0 and at most 86400")
    }
}

/// Makes sure only one node runs on a data directory.
struct NodeLock {
    let fd: Int32

    init(path: String) throws {
        fd = Foundation.open(path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { throw CLIError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw CLIError("a node is already running on \((path as NSString).deletingLastPathComponent): stop it first, or use another --dir")
        }
    }

    func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }
}

/// Timestamped log lines on stderr.
enum Log {
    static func line(_ text: String) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        FileHandle.standardError.write(Data("\(formatter.string(from: Date())) \(text)\n".utf8))
    }
}

/// `lansync sync`: one-shot exchange with peers.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Exchange everything with each --peer once, then exit.",
        discussion: "Exits 0 when this replica and every peer are up to date with each other; otherwise non-zero, with a line per peer that failed."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(name: .customLong("peer"), help: ArgumentHelp("A node to sync with (repeatable).", valueName: "HOST:PORT"))
    var peers: [PeerAddress] = []
    @Option(help: "Give up on a peer after this many seconds.")
    var timeout: Double = 60

    func validate() throws {
        guard !peers.isEmpty else { throw ValidationError("give at least one --peer HOST:PORT") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() async throws {
        let directory = data.directory
        let store = try directory.open()
        let identity = try directory.tlsIdentity()
        let results: [OneShotSync.Result]
        do {
            results = try await OneShotSync.run(store: store, identity: identity, peers: peers, timeout: .milliseconds(Int(timeout * 1000)))
        } catch { throw CLIError("\(error)") }
        var failures: [String] = []
        for result in results {
            if result.succeeded, let outcome = result.outcome, let peer = outcome.peer {
                print("synced with \(peer.name) (\(peer.nodeID.short)) at \(result.peer): sent \(outcome.sentUpdates), received \(outcome.receivedUpdates) field states")
            } else {
                failures.append("\(result.peer): \(result.error ?? "failed")")
            }
        }
        directory.nudgeNode()
        if !failures.isEmpty { throw CLIError("sync failed with " + failures.joined(separator: "; ")) }
    }
}

/// `lansync status`
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show this node, its replica and its peers.",
        discussion: "Works whether or not the node runs: it asks a running node, and reads the replica otherwise. 'digest' is equal on replicas that have converged."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let directory = data.directory
        let store = try directory.open()
        var report: JSON
        if let live = ControlClient.request(.object([("op", .string("status"))]), path: directory.controlSocketPath), live["node_id"] != nil {
            report = live
        } else {
            do { report = try StatusReport.make(store: store, running: false, listen: nil, peers: nil).json } catch { throw CLIError(error) }
        }
        if json {
            print(report.text)
            return
        }
        func s(_ j: JSON?) -> String {
            switch j {
            case .string(let v)?: return v
            case .integer(let i)?: return String(i)
            case .bool(let b)?: return b ? "yes" : "no"
            default: return "-"
            }
        }
        print("node     \(s(report["node_id"])) (\(s(report["name"])))")
        print("cluster  \(s(report["cluster_id"]))")
        print("state    " + (report["running"] == .bool(true) ? "running, listening on \(s(report["listen"])); mDNS \(s(report["mdns"]))" : "no node running on this directory"))
        print("replica  \(s(report["items"])) items, \(s(report["deleted"])) deleted, \(s(report["conflicts"])) conflicts; digest \(s(report["digest"]))")
        if case .object? = report["changes"], let changes = report["changes"] {
            let pending = changes["syncing"].map { "\(s($0)) syncing" } ?? "\(s(changes["dirty"])) waiting (DIRTY)"
            print("changes  \(s(changes["synced"])) of this node's changes are on the relay (SYNCED), \(pending)")
        }
        if case .array(let rejected)? = report["rejected"], !rejected.isEmpty {
            print("REJECTED \(rejected.count) of this node's changes were refused by the relay (permanent; the relay kept the earlier value):")
            for r in rejected.prefix(5) { print("         \(s(r["id"])).\(s(r["field"])): \(s(r["reason"]))") }
        }
        if case .array(let peers)? = report["peers"], !peers.isEmpty {
            let rows = peers.map { p -> [String] in
                let id = s(p["node_id"])
                let who = p["name"].map { s($0) } ?? "?"
                return [who + (id == "-" ? "" : " (\(id.prefix(7)))"), s(p["address"]), s(p["path"]) == "direct" ? s(p["source"]) : s(p["path"]),
                        p["connected"] == .bool(true) ? "connected" : "-", s(p["last_sync"]).prefix(19).description, s(p["lacks"]), s(p["last_error"])]
            }
            print("")
            print(Render.table(["PEER", "ADDRESS", "VIA", "STATE", "LAST SYNC", "LACKS", "LAST ERROR"], rows))
        } else {
            print("peers    none yet (run 'lansync node --peer HOST:PORT')")
        }
    }
}
