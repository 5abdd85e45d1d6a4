import ArgumentParser
import LansyncHost

/// `lansync node`: the long-running node.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Run this machine's node until SIGINT or SIGTERM.",
        discussion: """
            The node accepts peers on --listen, keeps a connection to every --peer (reconnecting with \
            backoff), pushes each change of the replica to connected peers at once, and every 15 s \
            sends a peer whatever it is known to lack, to repair anything missed. Stop it with Ctrl-C \
            or SIGTERM: it \
            finishes or abandons in-flight batches (each is one transaction) and exits 0.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @OptionGroup var api: APIOptions
    @OptionGroup var log: LogOptions
    @OptionGroup var writers: WriterLimitOptions
    @Option(
        help: ArgumentHelp(
            "Where to accept peers: [::] is IPv6 and IPv4 on every interface (IPv4 alone where the machine has no IPv6), 0.0.0.0 IPv4 alone.",
            valueName: "HOST:PORT"
        )
    )
    var listen = PeerAddress(host: "::", port: 7420)
    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp("A peer to keep connected to (repeatable).", valueName: "HOST:PORT")
    )
    var peers: [PeerAddress] = []
    @Option(
        help: ArgumentHelp(
            "The relay: carries changes to nodes this one never meets, and is the fallback when no direct peer is reachable. Repeatable: the node uses the first it reaches and fails over to the next.",
            valueName: "HOST:PORT"
        )
    )
    var relay: [PeerAddress] = []
    /// Accepted so that service files written before issue 63 still start; a node now keeps its
    /// relay session open at all times, so there is no interval left to set.
    @Option(help: .hidden)
    var relayInterval: Double?
    @Flag(help: "Do not advertise or browse with mDNS (use only --peer and the relay).")
    var noMdns = false
    @Option(
        parsing: .singleValue,
        help: ArgumentHelp(
            "Use mDNS adverts seen on this interface only (repeatable; a glob such as 'eth*'). Without it, every interface but container and virtual bridges (docker*, br-*, veth*, virbr*).",
            valueName: "NAME"
        )
    )
    var interfaces: [String] = []
    @Option(
        name: .customLong("ignore-interface"),
        help: ArgumentHelp(
            "Ignore mDNS adverts seen on this interface too (repeatable; a glob such as 'tun*').",
            valueName: "NAME"
        )
    )
    var ignoredInterfaces: [String] = []
    @Flag(help: "Do not dial the addresses other members pass on (use only --peer, mDNS and the relay).")
    var noGossip = false
    @Option(help: ArgumentHelp("Seconds between anti-entropy rounds.", visibility: .hidden))
    var antiEntropy: Double = 15
    @Option(help: ArgumentHelp("Seconds between collection rounds.", visibility: .hidden))
    var collectInterval: Double = 600
    @Option(
        help: ArgumentHelp(
            "Seconds a pruned session waits for a change it heard of before asking for it.",
            visibility: .hidden
        )
    )
    var graftDelay: Double?
    @Option(
        help: ArgumentHelp(
            "Seconds sooner a change must be heard of than it arrives to ask its teller at once.",
            visibility: .hidden
        )
    )
    var graftAhead: Double?
    @Option(
        help: ArgumentHelp(
            "Members (this node included) up to which every member is in the view (default 8).",
            visibility: .hidden
        )
    )
    var fullMeshUpTo: Int?

    func validate() throws {
        if let relayInterval { try validateInterval(relayInterval, "--relay-interval") }
        try validateInterval(antiEntropy, "--anti-entropy")
        try validateInterval(collectInterval, "--collect-interval")
        if let graftDelay { try validateInterval(graftDelay, "--graft-delay") }
        if let graftAhead { try validateInterval(graftAhead, "--graft-ahead") }
        if let fullMeshUpTo, !(1...1000).contains(fullMeshUpTo) {
            throw ValidationError("--full-mesh-up-to must be a number of members from 1 to 1000")
        }
    }

    func run() async throws {
        var settings = NodeSettings(listen: listen)
        settings.peers = peers
        settings.antiEntropyInterval = .milliseconds(Int(antiEntropy * 1000))
        settings.collectInterval = .milliseconds(Int(collectInterval * 1000))
        settings.graftDelay = graftDelay.map { .milliseconds(Int($0 * 1000)) }
        settings.graftAhead = graftAhead.map { .milliseconds(Int($0 * 1000)) }
        settings.fullMeshUpTo = fullMeshUpTo
        settings.writerBounds = writers.bounds
        settings.mdns = !noMdns
        settings.interfaces = interfaces
        settings.ignoredInterfaces = ignoredInterfaces
        settings.followGossip = !noGossip
        settings.relays = relay
        let directory = data.directory
        let logger = log.bootstrap()
        if relayInterval != nil {
            logger.warning("--relay-interval has no effect: a node keeps its session with the relay open at all times")
        }
        try await directory.runNode(
            settings,
            logger: logger,
            alongside: try api.service(for: directory, listen: listen, logger: logger).map { [$0] } ?? []
        )
    }
}
