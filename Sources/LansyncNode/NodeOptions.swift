public import LansyncDiscovery
public import LansyncIdentity
public import LansyncReplica
public import LansyncWire

/// What a node is told at start.
public struct NodeOptions: Sendable {
    public var listen: PeerAddress
    public var staticPeers: [PeerAddress]
    public var controlSocketPath: String
    public var antiEntropyInterval: Duration = .seconds(15)
    /// How long a pruned session waits for a change it heard of to arrive some other way before
    /// asking for it (``SessionMachine/SessionConfig/graftDelay``); nil: the machine's default.
    public var graftDelay: Duration?
    /// How much sooner a change must be heard of than it arrives for the session that told of it
    /// to be asked for changes at once (``SessionMachine/SessionConfig/graftAhead``); nil: default.
    public var graftAhead: Duration?
    /// How often the node looks at the replica's version vector for changes nobody announced
    /// (an edit made while the control socket was unreachable).
    public var pollInterval: Duration = .seconds(1)
    /// How peers are found on the LAN (mDNS through Avahi), or nil for static peers only.
    public var discovery: (any Discovery)?
    /// `.relay` for `lansync relay`, which settles conflicts with `settlePolicy`.
    public var role: Hello.Role = .peer
    public var settlePolicy: SettlePolicy = .latest
    /// On a relay that shares the authority with others: the gate, made once the replica's
    /// identity is known (``SettlingGate``); nil for a relay that settles alone.
    public var settlingGate: (@Sendable (ReplicaInfo) -> SettlingGate)?
    /// The limits on what this node takes in from peers: every node enforces ``Limits`` on
    /// arrival; a relay may be told lower ones, for the whole cluster.
    public var relayLimits = RelayLimits()
    /// How many writers peers may bring into this replica, in all and per session.
    public var writerBounds = WriterBounds.standard
    /// The most sessions a node serves at once (each one's memory is bounded, so this bounds the
    /// total); more are told `busy` and retry later.
    public var maxSessions = 128
    /// How often the node takes its members' reports into the stable frontier and collects the
    /// deleted items below it (Docs/MERGE.md, "Causal stability and collection").
    public var collectInterval: Duration = .seconds(600)
    /// How often the node looks whether the search texts are behind the replica, and writes
    /// them if it has been quiet since the last look (``Node/writeSearchTextsWhenQuiet()``).
    public var searchInterval: Duration = .seconds(1)
    /// Whether to dial the addresses other members pass on (``Hello/addresses``; Docs/DISCOVERY.md,
    /// "Where multicast cannot reach").
    public var followGossip = true
    /// The sizes of the view a node keeps once the cluster is past a full mesh (Docs/SCALE.md).
    public var view = PeerView.Limits()
    /// The relays this node hands its changes to, and falls back to when no direct peer is
    /// reachable: one at a time, the next when it cannot be reached (``RelayRoster``).
    public var relays: [PeerAddress] = []
    /// The cluster authority, on a machine that admits others (it issues certificates to
    /// machines that join with one of its invites); nil on every other machine.
    public var admitting: ClusterSecret?
    /// Removes the authority's key from this machine's data directory, when a set of admitting
    /// machines that leaves it out arrives (`lansync cluster admitters`).
    public var retireAuthority: (@Sendable () throws -> Void)?

    public init(listen: PeerAddress, staticPeers: [PeerAddress], controlSocketPath: String = "") {
        self.listen = listen
        self.staticPeers = staticPeers
        self.controlSocketPath = controlSocketPath
    }
}
