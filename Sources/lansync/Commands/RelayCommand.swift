import ArgumentParser
import Foundation
import LansyncHost

/// `lansync relay`: the designated node that carries changes and settles conflicts.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run this directory's node as the cluster's relay until SIGINT or SIGTERM.",
        discussion: """
            The relay is a full replica that every node can reach (a small server): it stores every \
            change, so nodes that are never online together still exchange their edits through it, \
            and it is the cluster's authority: when it holds concurrent values of a field it settles \
            them with its own write (--settle latest keeps the value every node already shows; \
            first-seen keeps the value that reached the relay first), and the losers stay in history.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @OptionGroup var api: APIOptions
    @OptionGroup var log: LogOptions
    @OptionGroup var writers: WriterLimitOptions
    @Option(
        help: ArgumentHelp(
            "Where to accept nodes: [::] is IPv6 and IPv4 on every interface (IPv4 alone where the machine has no IPv6), 0.0.0.0 IPv4 alone.",
            valueName: "HOST:PORT"
        )
    )
    var listen = PeerAddress(host: "::", port: 7420)
    @Option(help: "How to settle conflicts: latest or first-seen.")
    var settle: SettlePolicy = .latest
    @Option(
        help: ArgumentHelp(
            "Share the authority with other relays through this PostgreSQL database: one of them settles at a time, under a lease (Docs/RELAY.md).",
            valueName: "postgres://USER@HOST:PORT/DB"
        )
    )
    var authority: String?
    @Option(
        help: ArgumentHelp(
            "Keep the relay's replica in this PostgreSQL database, shared by every relay process given it (each a copy of this data directory); no local API then (Docs/RELAY.md).",
            valueName: "postgres://USER@HOST:PORT/DB"
        )
    )
    var store: String?
    @Option(help: "With --authority: seconds the lease lasts without a renewal (another relay takes over within this).")
    var lease: Double = 10
    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp("Another relay (or node) to keep connected to (repeatable).", valueName: "HOST:PORT")
    )
    var peers: [PeerAddress] = []
    @Flag(help: "Also advertise over mDNS (a relay is usually off the LAN).")
    var mdns = false
    @Option(help: "The largest field value the relay accepts, in bytes (at most 1048576, what every node accepts).")
    var maxValueBytes = Limits.maxValueBytes
    @Option(help: "The most fields an item may have (at most 256, what every node accepts).")
    var maxFields = Limits.maxFieldsPerItem
    @Option(help: "The most nodes served at once; more are told to retry later.")
    var maxSessions = 128
    @Option(help: ArgumentHelp("Seconds between anti-entropy rounds.", visibility: .hidden))
    var antiEntropy: Double = 15
    @Option(help: ArgumentHelp("Seconds between collection rounds.", visibility: .hidden))
    var collectInterval: Double = 600

    func validate() throws {
        // A zero or negative limit would make the relay overrule every change it is sent.
        guard maxValueBytes > 0 else { throw ValidationError("--max-value-bytes must be at least 1") }
        guard maxFields > 0 else { throw ValidationError("--max-fields must be at least 1") }
        // Every node refuses what is over Limits: a relay taking more would store what no one else does.
        guard maxValueBytes <= Limits.maxValueBytes else {
            throw ValidationError(
                "--max-value-bytes may be at most \(Limits.maxValueBytes), the limit every node enforces"
            )
        }
        guard maxFields <= Limits.maxFieldsPerItem else {
            throw ValidationError(
                "--max-fields may be at most \(Limits.maxFieldsPerItem), the limit every node enforces"
            )
        }
        guard maxSessions > 0 else { throw ValidationError("--max-sessions must be at least 1") }
        for (option, uri) in [("--authority", authority), ("--store", store)] {
            guard let uri else { continue }
            do {
                _ = try PostgresLocation(parsing: uri)
            } catch {
                throw ValidationError("\(option): \(error)")
            }
        }
        // Every process on one replica settles what its own sessions bring: without the lease two
        // could settle one conflict two ways.
        if store != nil, authority == nil {
            throw ValidationError(
                "--store needs --authority, so that one relay process settles at a time: give it the same database (--authority URI)"
            )
        }
        // Renewed every third of it, a lease under a second would keep the database busy.
        guard lease >= 1, lease <= 3600 else { throw ValidationError("--lease must be between 1 and 3600 seconds") }
        try validateInterval(antiEntropy, "--anti-entropy")
        try validateInterval(collectInterval, "--collect-interval")
    }

    func run() async throws {
        var settings = NodeSettings(listen: listen)
        settings.relaying = NodeSettings.Relaying(
            settle: settle,
            limits: RelayLimits(maxValueBytes: maxValueBytes, maxFieldsPerItem: maxFields),
            maxSessions: maxSessions
        )
        var credentialsWarnings: [String] = []
        if let authority {
            settings.relaying?.authority = try Self.location(
                authority,
                option: "--authority",
                warnings: &credentialsWarnings
            )
        }
        if let store {
            settings.relaying?.store = try Self.location(store, option: "--store", warnings: &credentialsWarnings)
        }
        settings.relaying?.lease = .milliseconds(Int(lease * 1000))
        settings.peers = peers
        settings.writerBounds = writers.bounds
        settings.antiEntropyInterval = .milliseconds(Int(antiEntropy * 1000))
        settings.collectInterval = .milliseconds(Int(collectInterval * 1000))
        settings.mdns = mdns
        let directory = data.directory
        let logger = log.bootstrap()
        for warning in credentialsWarnings { logger.warning("\(warning)") }
        try await directory.runNode(
            settings,
            logger: logger,
            alongside: try api.service(for: directory, listen: listen, logger: logger).map { [$0] } ?? []
        )
    }

    /// The database at `uri`, with the password from `PGPASSWORD` or the password file when the
    /// URI has none; a warning about the file, if any, goes to `warnings`.
    private static func location(_ uri: String, option: String, warnings: inout [String]) throws -> PostgresLocation {
        var location = try PostgresLocation(parsing: uri)
        do {
            if let warning = try location.readCredentials(
                environment: ProcessInfo.processInfo.environment,
                home: ProcessInfo.processInfo.environment["HOME"]
            ) {
                warnings.append(warning)
            }
        } catch {
            throw CLIError("\(option): \(error)")
        }
        return location
    }
}
