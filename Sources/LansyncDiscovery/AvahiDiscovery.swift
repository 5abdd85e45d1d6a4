import CAvahi
import Foundation
public import LansyncCore
import Synchronization

/// mDNS/DNS-SD through the system's Avahi daemon (libavahi-client, over D-Bus).
///
/// Publishes `_lansync._tcp` with our TXT record, browses for the same type, resolves what it finds,
/// and reports peers of our cluster (never ourselves; a service without our TXT keys is ignored
/// without error). ``browse(cluster:protocolMajor:)`` only browses: a machine joining with an
/// invite looks for the nodes of the cluster the code names. It survives the daemon: absent at start, it says so once and keeps waiting
/// (`AVAHI_CLIENT_NO_FAIL`); when the daemon restarts, it re-publishes and re-browses; without
/// D-Bus at all it retries every few seconds. A daemon that is there but too busy to answer (a
/// hundred daemons and nodes starting at once on two cores) leaves a client waiting for it to
/// appear, which it never does, or a service unpublished: the client is then made anew, 10 s and
/// then up to a minute apart, until it runs, publishes and browses.
///
/// All C callbacks arrive on Avahi's own poll thread and go no further than this class.
public final class AvahiDiscovery: Discovery, @unchecked Sendable {
    // @unchecked Sendable, and why it is safe: every mutable property below is read or written
    // only (a) inside Avahi callbacks, which the threaded poll runs on its thread while holding
    // its lock, or (b) in stop and in the work `whileRunning` runs on `connecting` (the first
    // client, retries, restarts), which take `lifecycle` and then that same poll lock
    // (`avahi_threaded_poll_lock`) — or (c) in start or browse before the poll thread runs, and
    // in stop after `loop` is `.stopped` under both locks and the thread has been stopped. That
    // work holds `lifecycle` from reading `loop` until it is done with its poll, so stop cannot
    // free the poll under it. Lock order is always lifecycle, then poll; callbacks take neither.
    private let lifecycle = NSLock()
    /// Where clients are made: `avahi_client_new` waits on D-Bus, up to 25 s for a busy daemon,
    /// which must not hold one of the few threads Swift's concurrency runs every task on.
    private let connecting = DispatchQueue(label: "lansync.avahi.connect")
    /// Avahi's event loop: not made yet (or it could not be), running on its poll, or stopped
    /// for good.
    private enum EventLoop {
        case idle
        case running(poll: OpaquePointer)
        case stopped
    }
    private var loop = EventLoop.idle
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var browser: OpaquePointer?
    private var advertisement: Advertisement?
    /// Which resolved services are reported: node, cluster, protocol major.
    private var accepts: (@Sendable (NodeID, NodeID, UInt32) -> Bool)?
    private var serviceName = ""
    private var continuation: AsyncStream<DiscoveryEvent>.Continuation?
    /// Each advert reported found: its node, and the address it is resolved at on each interface
    /// and family. It is lost only when it went from every one of them (a peer on Wi-Fi and
    /// Ethernet at once that leaves one is not lost, but no longer dialled there).
    private var adverts: [String: Advert] = [:]
    private struct Advert {
        let node: NodeID
        var port = 0
        /// On each interface and family: the host name the advert names, and the address the
        /// resolver picked for it (one of possibly several: Avahi picks "somewhat at random").
        var on: [Seen: (hostName: String, address: String)] = [:]
    }
    /// Every address of each advertised host name, on each interface and family, as its A or
    /// AAAA records come and go (a record browser each): a peer is dialled at all of them.
    private var hostAddresses: [HostKey: Set<String>] = [:]
    private var recordBrowsers: [HostKey: OpaquePointer] = [:]
    /// The adverts browsed and not yet resolved, and the resolvers running (a few at once).
    private var resolves = ResolveQueue<ServiceKey, String>(owner: \.name)
    /// An advert as the browser reported it: what a resolver is made for.
    private struct ServiceKey: Hashable {
        let seen: Seen
        let name: String
        let type: String
        let domain: String
    }
    /// A host name (lower-cased: a record's name comes as the responder spelt it) on one
    /// interface and family.
    private struct HostKey: Hashable {
        let name: String
        let seen: Seen

        init(name: String, seen: Seen) {
            self.name = name.lowercased()
            self.seen = seen
        }
    }
    private struct Seen: Hashable {
        let interface: AvahiIfIndex
        let proto: AvahiProtocol
    }
    private let interfaces: InterfaceFilter
    private var lastUnavailable: String?
    /// Set by ``survey(for:)``: every advert resolved, whoever it belongs to, on every interface
    /// (a node reports only its cluster's, on the interfaces it uses).
    private var sighting: (@Sendable (Sighting) -> Void)?
    /// Set when no client could be made at all: D-Bus itself did not answer (read by the survey
    /// once the poll thread has stopped).
    private var busUnreachable = false
    private var retry: Task<Void, Never>?
    /// Where our service stands on the current client: a restart starts it over. A browse
    /// (``browse(cluster:protocolMajor:)``) publishes nothing and stays `.unpublished`.
    private enum Publication {
        case unpublished
        case published
        /// It could not be published on this client.
        case failed
    }
    private var publication = Publication.unpublished
    /// Restarts since the client last ran, publishing and browsing: the next one waits longer.
    private var restarts = 0
    /// Counts the clients made, so a scheduled restart knows whether its client is still the one.
    private var generation = 0

    /// The nodes of its own cluster whose adverts a node resolves and holds at once, at most.
    public static let advertsHeld = 32

    /// - Parameter interfaces: the interfaces whose adverts a node uses (a survey sees all).
    public init(interfaces: InterfaceFilter = InterfaceFilter()) {
        self.interfaces = interfaces
    }

    deinit { stop() }

    public func start(_ advertisement: Advertisement) -> AsyncStream<DiscoveryEvent> {
        self.advertisement = advertisement
        serviceName = advertisement.name
        // A node holds a few dozen of its cluster's adverts, enough for the mesh and for the
        // view's 30 passive members (Docs/DISCOVERY.md, "Many machines"); a survey and a join
        // look at every advert.
        resolves = ResolveQueue(capacity: Self.advertsHeld, owner: \.name)
        return begin { node, cluster, proto in
            cluster == advertisement.clusterID && node != advertisement.nodeID
                && proto == advertisement.protocolMajor
        }
    }

    /// Browses without publishing anything, and reports the nodes whose cluster id `cluster`
    /// accepts and that speak `protocolMajor`.
    public func browse(
        cluster: @escaping @Sendable (NodeID) -> Bool,
        protocolMajor: UInt32
    ) -> AsyncStream<DiscoveryEvent> {
        begin { _, id, proto in cluster(id) && proto == protocolMajor }
    }

    private func begin(_ accepts: @escaping @Sendable (NodeID, NodeID, UInt32) -> Bool) -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream<DiscoveryEvent>.makeStream(bufferingPolicy: .unbounded)
        self.accepts = accepts
        self.continuation = continuation
        if let problem = AvahiLibrary.problem {
            continuation.yield(.unavailable(problem))
            return stream
        }
        guard let poll = avahi.threaded_poll_new() else {
            continuation.yield(.unavailable("cannot create the Avahi event loop"))
            return stream
        }
        loop = .running(poll: poll)
        _ = avahi.threaded_poll_start(poll)
        whileRunning { $0.connect() }
        return stream
    }

    public func stop() {
        lifecycle.lock()
        guard case .running(let poll) = loop else {
            lifecycle.unlock()
            return
        }
        avahi.threaded_poll_lock(poll)
        loop = .stopped
        retry?.cancel()
        avahi.threaded_poll_unlock(poll)
        lifecycle.unlock()
        // From here no callback or retry touches our state: the poll thread can be stopped.
        _ = avahi.threaded_poll_stop(poll)
        if let client { avahi.client_free(client) }  // frees its groups, browsers and resolvers
        client = nil
        group = nil
        browser = nil
        avahi.threaded_poll_free(poll)
        continuation?.finish()
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiDiscovery? {
        userdata.map { Unmanaged<AvahiDiscovery>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Creates the client (with the poll's lock held). Without D-Bus this fails; we then retry
    /// every 3 s.
    private func connect() {
        guard case .running(let poll) = loop, client == nil else { return }
        generation += 1
        var error: Int32 = 0
        client = avahi.client_new(
            avahi.threaded_poll_get(poll),
            AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in
                AvahiDiscovery.from(userdata)?.clientChanged(client, state)
            },
            context,
            &error
        )
        if client == nil {
            busUnreachable = true
            report(.unavailable("cannot reach the Avahi daemon over D-Bus (\(AvahiLibrary.describe(error)))"))
            scheduleRetry()
        }
    }

    private func scheduleRetry() {
        retry = Task { [weak self] in
            try? await Task.sleep(for: .seconds(3))
            guard let self, !Task.isCancelled else { return }
            self.whileRunning { $0.connect() }
        }
    }

    /// Runs `body` on `connecting` with `lifecycle` and the poll's lock held, unless stopped.
    private func whileRunning(_ body: @escaping @Sendable (AvahiDiscovery) -> Void) {
        connecting.async { [weak self] in
            guard let self else { return }
            self.lifecycle.withLock {
                guard case .running(let poll) = self.loop else { return }
                avahi.threaded_poll_lock(poll)
                defer { avahi.threaded_poll_unlock(poll) }
                body(self)
            }
        }
    }

    /// Reports a change of availability once, not on every callback.
    private func report(_ event: DiscoveryEvent) {
        switch event {
        case .unavailable(let why):
            guard lastUnavailable == nil else { return }
            lastUnavailable = why
        case .available:
            guard lastUnavailable != nil || adverts.isEmpty else { return }
            lastUnavailable = nil
        default: break
        }
        continuation?.yield(event)
    }

    // MARK: Callbacks (on the poll thread, lock held)

    private func clientChanged(_ client: OpaquePointer?, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            if let client {
                publish(client)
                browse(client)
                if browser == nil || publication == .failed {
                    scheduleRestart()
                } else {
                    restarts = 0
                }
            }
            lastUnavailable = ""  // force the next .available through
            report(.available)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            if let group { _ = avahi.entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            report(.unavailable("the Avahi daemon is not running; waiting for it (static peers still work)"))
            // A daemon that did not answer the client's first calls in time is taken for absent,
            // and the client waits for it to appear on the bus: if it is there already, forever.
            if client != nil { scheduleRestart() }
        case AVAHI_CLIENT_FAILURE:
            let error = client.map { avahi.client_errno($0) } ?? 0
            report(
                .unavailable(
                    "lost the Avahi daemon (\(AvahiLibrary.describe(error))); waiting for it to come back"
                )
            )
            // The daemon went away: start over with a new client, which waits for it.
            restart()
        default:
            break
        }
    }

    /// Frees the client (its group, browsers and resolvers with it), forgets what it found, and
    /// makes a new one.
    private func restart() {
        if let client { avahi.client_free(client) }
        client = nil
        group = nil
        browser = nil
        publication = .unpublished
        recordBrowsers.removeAll()  // freed with the client
        resolves.reset()  // so are the resolvers
        hostAddresses.removeAll()
        for advert in adverts.values { continuation?.yield(.lost(advert.node)) }
        adverts.removeAll()
        connect()
    }

    /// Makes the client anew after a while unless it recovers meanwhile: running, published (a
    /// node) and browsing. 10 s, then twice as long each time up to a minute.
    private func scheduleRestart() {
        let delay = Duration.seconds(min(60, 10 << min(restarts, 3)))
        let stale = generation
        retry?.cancel()
        retry = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard let self, !Task.isCancelled else { return }
            self.whileRunning { discovery in
                guard discovery.generation == stale, let client = discovery.client, !discovery.healthy(client)
                else { return }
                discovery.restarts += 1
                discovery.restart()
            }
        }
    }

    private func healthy(_ client: OpaquePointer) -> Bool {
        avahi.client_get_state(client) == AVAHI_CLIENT_S_RUNNING && browser != nil && publication != .failed
    }

    private func publish(_ client: OpaquePointer) {
        guard let advertisement else { return }
        if group == nil {
            group = avahi.entry_group_new(
                client,
                { group, state, userdata in
                    AvahiDiscovery.from(userdata)?.groupChanged(group, state)
                },
                context
            )
        }
        guard let group else {
            publication = .failed
            report(
                .unavailable(
                    "cannot publish our service: \(AvahiLibrary.describe(avahi.client_errno(client)))"
                )
            )
            return
        }
        guard avahi.entry_group_is_empty(group) != 0 else { return }
        var txt: UnsafeMutablePointer<AvahiStringList>?
        for entry in advertisement.txt { txt = avahi.string_list_add(txt, entry) }
        defer { avahi.string_list_free(txt) }
        let added = avahi.entry_group_add_service_strlst(
            group,
            AvahiIfIndex(AVAHI_IF_UNSPEC),
            AvahiProtocol(AVAHI_PROTO_UNSPEC),
            AvahiPublishFlags(0),
            serviceName,
            Advertisement.serviceType,
            nil,
            nil,
            UInt16(advertisement.port),
            txt
        )
        if added == AVAHI_ERR_COLLISION {
            renameAfterCollision()
            return
        }
        let committed = added >= 0 ? avahi.entry_group_commit(group) : added
        guard committed >= 0 else {
            publication = .failed
            report(.unavailable("cannot publish our service: \(AvahiLibrary.describe(committed))"))
            return
        }
        publication = .published
    }

    private func renameAfterCollision() {
        guard let next = avahi.alternative_service_name(serviceName) else { return }
        serviceName = String(cString: next)
        avahi.free(next)
        if let group { _ = avahi.entry_group_reset(group) }
        if let client { publish(client) }
    }

    private func groupChanged(_ group: OpaquePointer?, _ state: AvahiEntryGroupState) {
        if state == AVAHI_ENTRY_GROUP_COLLISION { renameAfterCollision() }
        if state == AVAHI_ENTRY_GROUP_FAILURE, let client {
            publication = .failed
            report(
                .unavailable(
                    "cannot publish our service: \(AvahiLibrary.describe(avahi.client_errno(client)))"
                )
            )
            scheduleRestart()
        }
    }

    private func browse(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi.service_browser_new(
            client,
            AvahiIfIndex(AVAHI_IF_UNSPEC),
            AvahiProtocol(AVAHI_PROTO_UNSPEC),
            Advertisement.serviceType,
            nil,
            AvahiLookupFlags(0),
            { _, interface, proto, event, name, type, domain, _, userdata in
                AvahiDiscovery.from(userdata)?.browsed(interface, proto, event, name, type, domain)
            },
            context
        )
    }

    private func browsed(
        _ interface: AvahiIfIndex,
        _ proto: AvahiProtocol,
        _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?,
        _ type: UnsafePointer<CChar>?,
        _ domain: UnsafePointer<CChar>?
    ) {
        guard client != nil, let name, let type, let domain else { return }
        let service = String(cString: name)
        // A survey sees every interface; a node only those it uses.
        guard sighting != nil || interfaces.allows(Self.interfaceName(interface)) else { return }
        let key = ServiceKey(
            seen: Seen(interface: interface, proto: proto),
            name: service,
            type: String(cString: type),
            domain: String(cString: domain)
        )
        switch event {
        case AVAHI_BROWSER_NEW:
            resolves.add(key)
            resolveWaiting()
        case AVAHI_BROWSER_REMOVE:
            resolves.remove(key)
            resolveWaiting()  // a place may have come free
            let seen = key.seen
            guard var advert = adverts[service], let gone = advert.on.removeValue(forKey: seen) else { return }
            adverts[service] = advert.on.isEmpty ? nil : advert
            stopRecords(unlessUsed: HostKey(name: gone.hostName, seen: seen))
            if advert.on.isEmpty {
                continuation?.yield(.lost(advert.node))
            } else {
                continuation?.yield(.found(self.discovered(advert)))
            }
        default:
            break
        }
    }

    /// Starts the resolvers the queue lets run. Each resolves to an address of the family its
    /// advert was seen in (an advert seen over IPv4 and IPv6 on two interfaces gives four
    /// candidates) and frees itself in its callback.
    private func resolveWaiting() {
        guard let client else { return }
        for key in resolves.next() {
            let resolver = avahi.service_resolver_new(
                client,
                key.seen.interface,
                key.seen.proto,
                key.name,
                key.type,
                key.domain,
                key.seen.proto,
                AvahiLookupFlags(0),
                { resolver, interface, proto, event, name, type, domain, hostName, address, port, txt, _, userdata in
                    guard let discovery = AvahiDiscovery.from(userdata) else { return }
                    let outcome = discovery.resolved(
                        event,
                        Seen(interface: interface, proto: proto),
                        name,
                        hostName,
                        address,
                        port,
                        txt
                    )
                    if let name, let type, let domain {
                        let key = ServiceKey(
                            seen: Seen(interface: interface, proto: proto),
                            name: String(cString: name),
                            type: String(cString: type),
                            domain: String(cString: domain)
                        )
                        discovery.resolves.finished(key, outcome)
                    }
                    if let resolver { _ = avahi.service_resolver_free(resolver) }
                    discovery.resolveWaiting()
                },
                context
            )
            if resolver == nil { resolves.finished(key, .failed) }
        }
    }

    private func resolved(
        _ event: AvahiResolverEvent,
        _ seen: Seen,
        _ name: UnsafePointer<CChar>?,
        _ hostName: UnsafePointer<CChar>?,
        _ address: UnsafePointer<AvahiAddress>?,
        _ port: UInt16,
        _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) -> ResolveQueue<ServiceKey, String>.Outcome {
        guard event == AVAHI_RESOLVER_FOUND else { return .failed }
        guard let name, let address, let accepts else { return .ignored }
        var entries: [String: String] = [:]
        var item = txt
        while let current = item {
            var key: UnsafeMutablePointer<CChar>?
            var value: UnsafeMutablePointer<CChar>?
            if avahi.string_list_get_pair(current, &key, &value, nil) == 0, let key {
                entries[String(cString: key)] = value.map { String(cString: $0) } ?? ""
                avahi.free(key)
                if let value { avahi.free(value) }
            }
            item = avahi.string_list_get_next(current)
        }
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        guard avahi.address_snprint(&buffer, buffer.count, address) != nil else { return .ignored }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let advert = Advertisement.peer(fromTXT: entries)
        if let sighting {
            sighting(
                Sighting(
                    service: String(cString: name),
                    interface: Self.interfaceName(seen.interface),
                    ipv6: address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6),
                    host: host,
                    port: Int(port),
                    node: advert?.node,
                    cluster: advert?.cluster,
                    protocolMajor: advert?.proto
                )
            )
        }
        // Strangers' services, other clusters and ourselves are ignored without a word.
        guard let peer = advert, accepts(peer.node, peer.cluster, peer.proto) else { return .ignored }
        let service = String(cString: name)
        let previous = adverts[service]
        var known = previous.flatMap { $0.node == peer.node ? $0 : nil } ?? Advert(node: peer.node)
        known.port = Int(port)
        let key = HostKey(name: hostName.map { String(cString: $0) } ?? "", seen: seen)
        known.on[seen] = (key.name, Self.dialable(host, on: seen.interface))
        adverts[service] = known
        // A service name that now names another node, or another host name: what was followed
        // for the old one goes.
        if let previous, previous.node != peer.node { continuation?.yield(.lost(previous.node)) }
        for (before, old) in previous?.on ?? [:] where known.on[before]?.hostName != old.hostName {
            stopRecords(unlessUsed: HostKey(name: old.hostName, seen: before))
        }
        if !key.name.isEmpty { browseRecords(key) }
        continuation?.yield(.found(self.discovered(known)))
        return .held
    }

    /// The peer an advert names, at every address it is known at, in a stable order: on each
    /// interface and family, its host name's addresses once their records are seen (an address
    /// whose record went is no longer dialled), else the one the resolver picked.
    private func discovered(_ advert: Advert) -> DiscoveredPeer {
        let sorted = advert.on.sorted { ($0.key.interface, $0.key.proto) < ($1.key.interface, $1.key.proto) }
        let hosts = sorted.flatMap { seen, host in
            let records = hostAddresses[HostKey(name: host.hostName, seen: seen)] ?? []
            return records.isEmpty ? [host.address] : records.sorted()
        }
        return DiscoveredPeer(
            nodeID: advert.node,
            hosts: Array(hosts.prefix(DiscoveredPeer.maxAddresses)),
            port: advert.port
        )
    }

    /// An address as it is dialled: a link-local IPv6 one through the interface it was seen on.
    private static func dialable(_ host: String, on interface: AvahiIfIndex) -> String {
        AddressPreference.isLinkLocal(host) ? "\(host)%\(interfaceName(interface))" : host
    }

    /// Follows the A (IPv4) or AAAA (IPv6) records of a host name an advert names, on the
    /// interface and family it was seen in: each one is an address to dial.
    private func browseRecords(_ key: HostKey) {
        guard recordBrowsers[key] == nil, let client else { return }
        let ipv6 = key.seen.proto == AvahiProtocol(AVAHI_PROTO_INET6)
        recordBrowsers[key] = avahi.record_browser_new(
            client,
            key.seen.interface,
            key.seen.proto,
            key.name,
            UInt16(AVAHI_DNS_CLASS_IN),
            UInt16(ipv6 ? AVAHI_DNS_TYPE_AAAA : AVAHI_DNS_TYPE_A),
            AvahiLookupFlags(0),
            { _, interface, proto, event, name, _, _, rdata, size, _, userdata in
                guard let name, let rdata else { return }
                let key = HostKey(name: String(cString: name), seen: Seen(interface: interface, proto: proto))
                AvahiDiscovery.from(userdata)?.record(event, key, UnsafeRawBufferPointer(start: rdata, count: size))
            },
            context
        )
    }

    private func record(_ event: AvahiBrowserEvent, _ key: HostKey, _ data: UnsafeRawBufferPointer) {
        guard recordBrowsers[key] != nil, data.count == 4 || data.count == 16 else { return }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(data.count == 4 ? AF_INET : AF_INET6, data.baseAddress, &text, socklen_t(text.count)) != nil
        else { return }
        let host = Self.dialable(
            String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            on: key.seen.interface
        )
        switch event {
        case AVAHI_BROWSER_NEW:
            // Anyone on the LAN may publish records: a host name's addresses are bounded.
            guard hostAddresses[key, default: []].count < DiscoveredPeer.maxAddresses,
                hostAddresses[key, default: []].insert(host).inserted
            else { return }
        case AVAHI_BROWSER_REMOVE: guard hostAddresses[key]?.remove(host) != nil else { return }
        default: return
        }
        for advert in adverts.values where advert.on[key.seen].map({ $0.hostName.lowercased() == key.name }) == true {
            continuation?.yield(.found(self.discovered(advert)))
        }
    }

    /// Stops following a host name's records once no advert names it on that interface and family.
    private func stopRecords(unlessUsed key: HostKey) {
        guard !adverts.values.contains(where: { $0.on[key.seen]?.hostName.lowercased() == key.name }) else { return }
        if let browser = recordBrowsers.removeValue(forKey: key) { _ = avahi.record_browser_free(browser) }
        hostAddresses[key] = nil
    }
}

// MARK: Survey

/// One `_lansync._tcp` advert as ``AvahiDiscovery/survey(for:)`` saw it: on one interface, in
/// one address family.
public struct Sighting: Sendable, Hashable {
    /// The DNS-SD instance name: the machine's name (``Advertisement/instanceName(for:node:)``),
    /// or Avahi's renaming after a collision.
    public var service: String
    /// The interface it was seen on (`eth0`), or its index when it has no name.
    public var interface: String
    public var ipv6: Bool
    public var host: String
    public var port: Int
    /// What its TXT record names; all nil for a service of our type that is not lansync's.
    public var node: NodeID?
    public var cluster: NodeID?
    public var protocolMajor: UInt32?

    public init(
        service: String,
        interface: String,
        ipv6: Bool,
        host: String,
        port: Int,
        node: NodeID? = nil,
        cluster: NodeID? = nil,
        protocolMajor: UInt32? = nil
    ) {
        self.service = service
        self.interface = interface
        self.ipv6 = ipv6
        self.host = host
        self.port = port
        self.node = node
        self.cluster = cluster
        self.protocolMajor = protocolMajor
    }
}

/// What ``AvahiDiscovery/survey(for:)`` found: whether the daemon answered, and every advert seen.
public struct Survey: Sendable {
    /// Nil if the Avahi daemon answered over D-Bus; otherwise why not, in words.
    public var unavailable: String?
    /// True if D-Bus itself could not be reached (no daemon can answer then).
    public var noDBus: Bool
    public var sightings: [Sighting]

    public init(unavailable: String? = nil, noDBus: Bool = false, sightings: [Sighting] = []) {
        self.unavailable = unavailable
        self.noDBus = noDBus
        self.sightings = sightings
    }
}

extension AvahiDiscovery {
    /// Browses `_lansync._tcp` for `duration` without publishing anything, and reports every
    /// advert resolved (any cluster, ourselves included, both address families) and whether the
    /// daemon answered: what `lansync doctor` shows.
    public static func survey(for duration: Duration) async -> Survey {
        let discovery = AvahiDiscovery()
        let seen = Sightings()
        // Before `begin` starts the poll thread: nothing else touches the property yet.
        discovery.sighting = { seen.add($0) }
        let events = discovery.begin { _, _, _ in false }
        let watcher = Task {
            var state: (unavailable: String?, answered: Bool) = (nil, false)
            for await event in events {
                switch event {
                case .available: state = (nil, true)
                case .unavailable(let why) where !state.answered: state.unavailable = why
                default: break
                }
            }
            return state
        }
        try? await Task.sleep(for: duration)
        discovery.stop()
        let state = await watcher.value
        let why = state.answered ? nil : state.unavailable ?? "the Avahi daemon did not answer"
        // After `stop`: the poll thread no longer runs, so the flag is read alone.
        return Survey(unavailable: why, noDBus: why != nil && discovery.busUnreachable, sightings: seen.all)
    }

    static func interfaceName(_ index: AvahiIfIndex) -> String {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard index >= 0, if_indextoname(UInt32(index), &buffer) != nil else { return "interface \(index)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The adverts a survey collects, appended on Avahi's poll thread and read once it stopped.
private final class Sightings: Sendable {
    private let list = Mutex<[Sighting]>([])

    func add(_ sighting: Sighting) { list.withLock { if !$0.contains(sighting) { $0.append(sighting) } } }

    var all: [Sighting] { list.withLock { $0 } }
}
