import LansyncDiscovery
public import LansyncNode
public import LansyncPostgres
import LansyncWire
public import Logging

/// How to run a machine's node (`lansync node`) or the cluster's relay (`lansync relay`): what a
/// front end chooses. The host turns it into the node's options (``DataDirectory/runNode(_:logger:alongside:)``),
/// so no front end needs the node's own types.
public struct NodeSettings: Sendable {
    /// Where to accept peers.
    public var listen: PeerAddress
    /// Peers to keep connected to.
    public var peers: [PeerAddress] = []
    /// The cluster's relay addresses (none without a relay), tried in this order.
    public var relays: [PeerAddress] = []
    /// Whether to advertise and browse with mDNS.
    public var mdns = true
    /// The interfaces whose mDNS adverts are used: if not empty, only these (globs).
    public var interfaces: [String] = []
    /// Interfaces whose adverts are ignored, beyond the container and virtual bridges (globs).
    public var ignoredInterfaces: [String] = []
    /// Whether to dial the addresses other members pass on in their hellos.
    public var followGossip = true
    public var antiEntropyInterval: Duration = .seconds(15)
    /// How long a pruned session waits before asking for a change it heard of (nil: default).
    public var graftDelay: Duration?
    /// How much sooner a change must be heard of than it arrives to graft at once (nil: default).
    public var graftAhead: Duration?
    /// Members up to which the view is the full mesh (nil: the default, 8).
    public var fullMeshUpTo: Int?
    /// How often the node runs a collection round (Docs/MERGE.md, "Causal stability and collection").
    public var collectInterval: Duration = .seconds(600)
    /// What peers' batches may add to the replica's writers.
    public var writerBounds = WriterBounds.standard
    /// Set when this node is the cluster's relay.
    public var relaying: Relaying?

    /// What only the relay has: how it settles conflicts, the limits it enforces for the whole
    /// cluster (at most what every node does), and how many nodes it serves at once.
    public struct Relaying: Sendable {
        public var settle: SettlePolicy
        public var limits: RelayLimits
        public var maxSessions: Int
        /// Where the relays that share the authority keep its lease and ledger (`--authority`);
        /// nil for a relay that settles alone.
        public var authority: PostgresLocation?
        /// How long the lease lasts without a renewal: a relay that dies is replaced as the one
        /// that settles within this time (plus a third of it).
        public var lease: Duration = .seconds(10)
        /// Where the relay's replica lives when not in the data directory's SQLite file
        /// (`--store`): a PostgreSQL database that any number of relay processes share.
        public var store: PostgresLocation?

        public init(settle: SettlePolicy, limits: RelayLimits, maxSessions: Int) {
            self.settle = settle
            self.limits = limits
            self.maxSessions = maxSessions
        }
    }

    public init(listen: PeerAddress) { self.listen = listen }

    /// The node's options for these settings.
    func options(logger: Logger) -> NodeOptions {
        var options = NodeOptions(listen: listen, staticPeers: peers)
        options.antiEntropyInterval = antiEntropyInterval
        options.graftDelay = graftDelay
        options.graftAhead = graftAhead
        if let fullMeshUpTo { options.view.fullMeshUpTo = fullMeshUpTo }
        options.collectInterval = collectInterval
        options.writerBounds = writerBounds
        options.relays = relays
        options.followGossip = followGossip
        if mdns {
            options.discovery = AvahiDiscovery(
                interfaces: InterfaceFilter(only: interfaces, ignoring: ignoredInterfaces)
            )
        }
        if let relaying {
            options.role = .relay
            options.settlePolicy = relaying.settle
            options.relayLimits = relaying.limits
            options.maxSessions = relaying.maxSessions
            if let location = relaying.authority {
                options.settlingGate = SharedAuthority.gate(location: location, lease: relaying.lease, logger: logger)
            }
        }
        return options
    }
}

extension DataDirectory {
    /// Runs this directory's node (or relay) as `settings` say, until SIGINT or SIGTERM.
    public func runNode(
        _ settings: NodeSettings,
        logger: Logger,
        alongside services: [NodeService] = []
    ) async throws {
        if let store = settings.relaying?.store {
            if !services.isEmpty {
                logger.notice(
                    "the local API and the web page read a SQLite replica: a relay whose replica is in PostgreSQL does not serve them"
                )
            }
            return try await runRelay(onPostgres: store, options: settings.options(logger: logger), logger: logger)
        }
        try await runNode(settings.options(logger: logger), logger: logger, alongside: services)
    }
}

/// The node's log: its lines, as text or JSON Lines, from a least level up.
public enum NodeLogging {
    /// Why `level` and `format` cannot be used, or nil if they can.
    public static func problem(level: String, format: String) -> String? {
        guard Logger.Level(rawValue: level) != nil else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            return "--log-level \(level) is not a level: give one of \(levels)"
        }
        guard LineLogHandler.Format(rawValue: format) != nil else {
            return "--log-format \(format) is not a format: give text or json"
        }
        return nil
    }

    /// Makes every log line of this process go to stderr as `level` and `format` say; returns
    /// the node's logger.
    public static func bootstrap(level: String, format: String) -> Logger {
        let level = Logger.Level(rawValue: level) ?? .info
        let format = LineLogHandler.Format(rawValue: format) ?? .text
        LoggingSystem.bootstrap { _ in LineLogHandler(level: level, format: format) }
        return Logger(label: "lansync")
    }
}
