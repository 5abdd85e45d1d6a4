public import LansyncCore
import LansyncDiscovery
public import LansyncReplica
public import LansyncWire
public import Logging

/// The live state of every peer a node knows: configured addresses not reached yet, connected
/// sessions, and what each peer last reported. Persists what `status` shows when no node runs.
///
/// It also keeps at most one session per peer: when two nodes dial each other at once, both keep
/// the connection dialled by the node with the lower id, so both sides agree without talking.
public actor PeerRegistry {
    /// What the node knows of one peer now: identity, address, how it was found, connection,
    /// last sync and error, its version vector, and the current session's counters.
    public struct Entry: Sendable {
        public var nodeID: NodeID?
        public var name: String?
        public var address: String?
        /// Every address discovery last saw it advertised at, in dialling order.
        public var advertised: [String] = []
        public var source: PeerSource
        public var connected = false
        public var lastSync: UInt64?
        public var lastError: String?
        public var versionVector = VersionVector()
        public var counters = SessionCounters()
        public var waitedRoundTrips = 0
        /// The peer's delta under way, when it announced its size: field states expected,
        /// received so far, and when it began (Unix ms).
        public var receiving: (expected: Int, received: Int, since: UInt64)?
        /// The peer's wall clock minus this node's when its last hello arrived (ms), nil if its
        /// hello did not say (before protocol 1.7).
        public var clockOffset: Int64?
        /// Where the peer accepts sessions, as far as this node knows: the address it dialled or
        /// saw advertised, or the address an inbound session came from with the port the peer's
        /// hello says it listens on. What this node passes on to others (``gossip(except:)``).
        public var listenAddress: String?
    }

    struct ActiveSession {
        let token: Int
        let dialer: NodeID
        let source: PeerSource
        let close: @Sendable () -> Void
    }

    let store: any ReplicaStorage
    let io: BlockingIO
    let localNode: NodeID
    private var byNode: [NodeID: Entry] = [:]
    private var configured: [String: Entry] = [:]  // static addresses, by address, until their node is known
    private var active: [NodeID: ActiveSession] = [:]
    /// Sessions closed because a better connection to the same peer replaced them.
    private var superseded: Set<Int> = []
    private var nextToken = 0
    public private(set) var listenAddress: String?
    /// Where mDNS discovery stands.
    public private(set) var discoveryState = DiscoveryState.starting
    /// Peers whose record changed since it was last saved, and peer names to record.
    private var unsaved: Set<NodeID> = []
    private var unsavedNames: [(name: String, ids: Set<NodeID>)] = []
    /// When each peer's last sync time was last saved (``upToDate``).
    private var savedSync: [NodeID: UInt64] = [:]
    /// How often an idle connected peer's up-to-date time (its member report) is saved, in ms:
    /// well within the cluster's away window, so that a connected member never looks away.
    private var reportEvery: UInt64 = 60_000
    /// Each peer's version vector as last saved.
    private var savedVectors: [NodeID: VersionVector] = [:]
    /// How long the last save took (``gathering(afterSaveTook:)``).
    private var lastSave: Duration = .zero
    private let saves: AsyncStream<Void>
    private let requestSave: AsyncStream<Void>.Continuation
    let logger: Logger
    /// Told each time what this node knows of its peers is saved: the sync state of the items
    /// edited here is judged from it (the local API's feed passes it on as `sync` events).
    let acknowledgements: ChangeHub

    public init(
        store: any ReplicaStorage,
        io: BlockingIO,
        localNode: NodeID,
        logger: Logger = .silent,
        acknowledgements: ChangeHub = ChangeHub()
    ) {
        self.store = store
        self.io = io
        self.localNode = localNode
        self.logger = logger
        self.acknowledgements = acknowledgements
        (saves, requestSave) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Loads what earlier runs recorded.
    public func load() async {
        let store = self.store
        let records: [PeerRecord]
        do { records = try await io.run { try store.peers() } } catch {
            logger.error("could not read the peers recorded by earlier runs: \(error)")
            return
        }
        for r in records where r.nodeID != localNode {
            byNode[r.nodeID] = Entry(
                nodeID: r.nodeID,
                name: r.name,
                address: r.address,
                // Which node is the relay is this run's to say (`--relay`, named again by
                // configure(address:source:)): a peer kept as the strongest way it was known must
                // not stay the relay, for status and for what counts as synced, once it is not.
                // It was named by the user, as a --peer is.
                source: r.source == .relay ? .configured : r.source,
                lastSync: r.lastSync,
                lastError: r.lastError,
                versionVector: r.versionVector
            )
        }
    }

    public func setListenAddress(_ address: String) { listenAddress = address }
    public func setDiscoveryState(_ state: DiscoveryState) { discoveryState = state }

    /// Discovery saw `node` at `addresses` (in dialling order).
    public func discovered(_ node: NodeID, addresses: [String]) {
        guard let address = addresses.first else { return }
        var entry = byNode[node] ?? Entry(nodeID: node, source: .mdns)
        // The advertised address is where the peer listens: more useful than the ephemeral port
        // of a connection it opened to us. An address the user named (a --peer, the relay) stays
        // as named, and the address a session of ours answered at stays while it is connected.
        if entry.source.strongest(.mdns) == .mdns, !(entry.connected && entry.source == .mdns) {
            entry.address = address
            entry.source = .mdns
        }
        entry.advertised = addresses
        // Where it listens, to pass on: a routable address, never a link-local one.
        if entry.listenAddress.map(Self.isLinkLocal) ?? true {
            entry.listenAddress = addresses.first { !Self.isLinkLocal($0) } ?? entry.listenAddress ?? address
        }
        byNode[node] = entry
    }

    /// Where this node last reached its members, to pass on in a hello (``Hello/addresses``):
    /// those it has been up to date with and knows an address they listen on, the latest first,
    /// at most ``WireLimits/maxAddresses``; never `peer`'s own (it knows where it listens), nor a
    /// link-local one (it names an interface of this machine).
    public func gossip(except peer: NodeID) -> [Hello.Address] {
        byNode.values.compactMap { entry -> Hello.Address? in
            guard let node = entry.nodeID, node != peer, let address = entry.listenAddress, let at = entry.lastSync,
                !Self.isLinkLocal(address)
            else { return nil }
            return Hello.Address(nodeID: node, address: address, at: at)
        }
        .sorted { ($0.at, $0.nodeID) > ($1.at, $1.nodeID) }
        .prefix(WireLimits.maxAddresses).map { $0 }
    }

    /// Discovery no longer sees `node` advertised: it is listed at no address now.
    public func undiscovered(_ node: NodeID) { byNode[node]?.advertised = [] }

    /// True for a `HOST:PORT` whose host is link-local (it names an interface of this machine).
    static func isLinkLocal(_ address: String) -> Bool {
        PeerAddress(parsing: address).map { AddressPreference.isLinkLocal($0.host) } ?? false
    }

    public func configure(address: String, source: PeerSource) {
        let known = byNode.filter { $0.value.address == address }.map(\.key)
        guard !known.isEmpty else {
            configured[address] = configured[address] ?? Entry(address: address, source: source)
            return
        }
        // A peer remembered from an earlier run at this address is the one named now.
        for node in known {
            guard var entry = byNode[node] else { continue }
            entry.source = entry.source.strongest(source)
            byNode[node] = entry
        }
    }

    /// The node last seen at `address`, if any.
    public func node(at address: String) -> NodeID? {
        byNode.values.first { $0.address == address }?.nodeID
    }

    public func isConnected(_ node: NodeID) -> Bool { active[node] != nil }

    /// Closes every session, to be opened again at once (their hellos then carry what changed,
    /// such as a new revocation). Ended this way, a session records no error.
    public func reopenAll() {
        for node in Array(active.keys) { closeSession(of: node) }
    }

    /// Closes `node`'s session so that a new one starts (its hello lacked a statement).
    public func reopen(_ node: NodeID) { closeSession(of: node) }

    /// Closes `node`'s session because the view keeps it no longer (it may dial again, and is
    /// then admitted by the view's rules); its end records nothing.
    public func closeForView(_ node: NodeID) { closeSession(of: node) }

    /// Records why `node` is refused (a revoked identity), and closes its session if it has one.
    public func refuse(_ node: NodeID, error: String) {
        closeSession(of: node)
        byNode[node]?.lastError = error
        persist(node)
    }

    /// Closes a session on purpose: it is no longer the node's (a new one may start at once),
    /// and its end records nothing.
    private func closeSession(of node: NodeID) {
        guard let session = active.removeValue(forKey: node) else { return }
        superseded.insert(session.token)
        byNode[node]?.connected = false
        session.close()
    }

    /// A session reached its peer. Returns a token, or nil if a session with that peer already
    /// exists and wins the tie-break (the caller then closes its own).
    public func claim(
        peer hello: Hello,
        address: String?,
        source: PeerSource,
        outbound: Bool,
        close: @escaping @Sendable () -> Void
    ) -> Int? {
        // What the hello teaches holds even for a connection about to be closed as a duplicate:
        // the address we dialled belongs to this node.
        var entry = byNode[hello.nodeID] ?? Entry(nodeID: hello.nodeID, source: source)
        if outbound, let address {
            // Dialled at an address the user named: that is how it is known, whichever loop
            // reached it first.
            let named = configured.removeValue(forKey: address)?.source
            entry.address = address
            entry.source = entry.source.strongest(source).strongest(named ?? source)
            if !Self.isLinkLocal(address) || entry.listenAddress == nil { entry.listenAddress = address }
        } else if entry.address == nil {
            entry.address = address
            entry.source = source
        }
        if !outbound, hello.listenPort > 0, let address, let came = PeerAddress(parsing: address) {
            let listens = PeerAddress(host: came.host, port: Int(hello.listenPort)).description
            entry.listenAddress = listens
            // A peer given with --peer that dialled in before this node's dial reached it: the
            // address named is its, not another peer's that never answered.
            if let named = configured.removeValue(forKey: listens) {
                entry.address = listens
                entry.source = entry.source.strongest(named.source)
            }
        }
        entry.name = hello.name
        entry.versionVector.join(hello.versionVector)
        byNode[hello.nodeID] = entry
        nextToken += 1
        // A one-shot `lansync sync` (possibly from the directory of a running node, sharing its
        // id) never replaces or blocks a node's session.
        guard hello.role != .oneShot else {
            persist(hello.nodeID)
            return nextToken
        }
        let dialer = outbound ? localNode : hello.nodeID
        if let existing = active[hello.nodeID] {
            guard dialer < existing.dialer else { return nil }
            superseded.insert(existing.token)
            existing.close()
        }
        active[hello.nodeID] = ActiveSession(token: nextToken, dialer: dialer, source: source, close: close)
        byNode[hello.nodeID]?.connected = true
        byNode[hello.nodeID]?.lastError = nil
        persist(hello.nodeID)
        // The peer's current writer id names its writes too (history shows "who").
        unsavedNames.append((hello.name, [hello.nodeID, hello.writer]))
        requestSave.yield()
        return nextToken
    }

    /// Saves idle peers' reports at least four times per away window (at most once a minute).
    public func setAwayWindow(_ milliseconds: UInt64) { reportEvery = max(1_000, min(60_000, milliseconds / 4)) }

    public func upToDate(_ node: NodeID, peerVersionVector: VersionVector, at time: UInt64) {
        guard var entry = byNode[node] else { return }
        // Against what was last saved: progress reports join the vector between saves, and the
        // saved vector is the member's report the stable frontier reads.
        let before = savedVectors[node]
        entry.lastSync = time
        entry.versionVector.join(peerVersionVector)
        byNode[node] = entry
        // Every idle anti-entropy round ends up to date: saving each one would be a write
        // transaction per peer per round. What the peer holds is saved when it changes; the time
        // alone at most once a minute (``setAwayWindow(_:)``), and when the session ends.
        if entry.versionVector != before || time >= (savedSync[node] ?? 0) + reportEvery {
            savedSync[node] = time
            persist(node)
        }
    }

    /// Records how far `node`'s clock is from this node's, as its hello said.
    public func noteClock(_ node: NodeID, offset: Int64) {
        byNode[node]?.clockOffset = offset
    }

    /// The counters of the current session with `node`.
    public func progress(_ node: NodeID, _ p: SessionObserver.Progress) {
        byNode[node]?.counters = p.counters
        byNode[node]?.waitedRoundTrips = p.waitedRoundTrips
        // What the session knows the peer holds keeps LACKS current between up-to-date points.
        if !p.peerMoved.isEmpty { byNode[node]?.versionVector.join(p.peerMoved) }
        if let expected = p.expecting {
            let since =
                byNode[node]?.receiving.flatMap { $0.expected == expected ? $0.since : nil } ?? WallClock.milliseconds
            byNode[node]?.receiving = (expected, p.receivedOfExpected, since)
        } else {
            byNode[node]?.receiving = nil
        }
    }

    /// A session ended (token from ``claim``), or a dial failed before any hello (node nil).
    /// Returns false if the session was closed on purpose, replaced by a better connection.
    @discardableResult
    public func ended(node: NodeID?, token: Int?, address: String?, error: String?) -> Bool {
        if let token, superseded.remove(token) != nil { return false }
        if let node, let token, active[node]?.token == token {
            active.removeValue(forKey: node)
            byNode[node]?.connected = false
        }
        if let node, byNode[node] != nil {
            if let error { byNode[node]?.lastError = error }
            persist(node)
        } else if let address {
            if let known = self.node(at: address) {
                byNode[known]?.lastError = error
                persist(known)
            } else {
                configured[address]?.lastError = error
            }
        }
        return true
    }

    public func snapshot() -> [Entry] {
        let known = byNode.values.sorted {
            ($0.name ?? "", $0.nodeID?.text ?? "") < ($1.name ?? "", $1.nodeID?.text ?? "")
        }
        return known + configured.values.sorted { ($0.address ?? "") < ($1.address ?? "") }
    }

    private func persist(_ node: NodeID) {
        unsaved.insert(node)
        requestSave.yield()
    }

    /// Saves what changed, one save at a time and in order, until the calling task is cancelled;
    /// then saves what changed last. The node runs it as one of its tasks.
    ///
    /// A change reaches each peer within a few milliseconds of the others, and each peer's
    /// acknowledgement asks for a save: waiting ``saveGathering`` first makes them one
    /// transaction instead of one per peer.
    public func runPersistence() async {
        for await _ in saves {
            try? await Task.sleep(for: Self.gathering(afterSaveTook: lastSave))
            await saveChanges()
        }
        await saveChanges()
    }

    static let saveGathering: Duration = .milliseconds(50)

    /// How long to gather acknowledgements before the next save: ``saveGathering``, or twenty
    /// times as long as the last save took, at most five seconds; so saving takes at most about
    /// a twentieth of the node's time, whatever its size.
    ///
    /// A save writes each changed peer's version vector and member report, an entry per writer:
    /// on a relay serving a thousand members, a thousand vectors of a thousand entries, twenty
    /// times a second at 50 ms (W10: 8% of a relay's CPU at 200 members, growing with the square
    /// of their number, and holding the write lock that members' batches wait for). The table is
    /// the node's memory of its peers between runs, read when it starts and for items' sync
    /// states: a few seconds' lag costs nothing there. The time measured includes any wait for
    /// the write lock, so a busy writer is asked less often too.
    static func gathering(afterSaveTook last: Duration) -> Duration {
        min(max(last * 20, saveGathering), .seconds(5))
    }

    /// At most this many peers are saved in one transaction. A relay's save of a thousand
    /// members (each a vector and a report of a thousand writers) took most of a second, and
    /// every member's batch waited for it behind the write lock (W10: deliveries 3 s late every
    /// five seconds); in parts, a batch waits for one part at most.
    static let savedAtOnce = 50

    /// `records` in parts of ``savedAtOnce``, each with its peers' reports; the names go with the
    /// first.
    static func parts(
        _ records: [PeerRecord],
        reports: [MemberReport],
        names: [(name: String, ids: Set<NodeID>)]
    ) -> [(records: [PeerRecord], reports: [MemberReport], names: [(name: String, ids: Set<NodeID>)])] {
        let byNode = Dictionary(reports.map { ($0.nodeID, $0) }, uniquingKeysWith: { first, _ in first })
        return stride(from: 0, to: max(records.count, 1), by: savedAtOnce).map { start in
            let part = Array(records[start..<min(start + savedAtOnce, records.count)])
            return (part, part.compactMap { byNode[$0.nodeID] }, start == 0 ? names : [])
        }
    }

    private func saveChanges() async {
        let records = unsaved.sorted().compactMap { node -> PeerRecord? in
            guard let e = byNode[node] else { return nil }
            return PeerRecord(
                nodeID: node,
                name: e.name,
                address: e.address,
                source: e.source,
                lastSync: e.lastSync,
                lastError: e.lastError,
                versionVector: e.versionVector
            )
        }
        // A connected peer's vector is its progress as of now: its member report.
        let now = WallClock.milliseconds
        let reports = unsaved.compactMap { node -> MemberReport? in
            guard let e = byNode[node], e.connected else { return nil }
            return MemberReport(nodeID: node, seen: e.versionVector, at: now)
        }
        for record in records { savedVectors[record.nodeID] = record.versionVector }
        let names = unsavedNames
        unsaved.removeAll()
        unsavedNames.removeAll()
        guard !records.isEmpty || !names.isEmpty else { return }
        let (store, io) = (self.store, self.io)
        let parts = Self.parts(records, reports: reports, names: names)
        do {
            // In a task of its own: when the node stops, this one is cancelled, and the thread
            // pool refuses work from a cancelled task (a save, often the last, was lost in about
            // one stop of ten).
            lastSave = try await Task {
                var took = Duration.zero
                for part in parts {
                    took += try await io.write {
                        let started = ContinuousClock.now
                        try store.savePeers(part.records, reports: part.reports, names: part.names)
                        return ContinuousClock.now - started
                    }
                }
                return took
            }.value
            // Items' sync states are read from the saved peer table: they may have moved now.
            if !records.isEmpty { acknowledgements.notify(version: nil) }
        } catch {
            logger.error(
                "could not record what this node knows of its peers (status shows it while the node runs): \(error)"
            )
        }
    }
}
