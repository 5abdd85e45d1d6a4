import Foundation
public import LansyncCore
import LansyncDiscovery
public import LansyncIdentity
public import LansyncNode
public import LansyncReplica
import LansyncTransport
import LansyncWire
import NIOCore
import NIOPosix

/// Admitting machines and joining ones (Docs/SECURITY.md): `lansync invite` on a machine that
/// holds the cluster authority's key, `lansync join` on the new machine, which makes its own key
/// and receives only its certificate and the authority's.
extension DataDirectory {
    /// The cluster authority, if this directory holds its key (the machine admits others); nil if
    /// it holds the authority's certificate alone.
    public func admittingAuthority() throws(HostError) -> ClusterSecret? {
        let text: String
        do { text = try String(contentsOfFile: clusterPath, encoding: .utf8) } catch {
            throw HostError("cannot read \(clusterPath): restore it from a backup, or 'lansync join' a new directory")
        }
        guard text.contains("PRIVATE KEY") else { return nil }
        do { return try ClusterSecret(pem: text) } catch { throw HostError("\(clusterPath) is \(error)") }
    }

    /// An invite `lansync invite` printed.
    public struct Invitation: Sendable {
        public let code: InviteCode
        public let name: String?
        /// Unix milliseconds.
        public let expiresAt: UInt64
        /// Whether a node runs on this directory now, to answer the join.
        public let nodeRunning: Bool
    }

    /// Records a new one-time invite and returns its code. `address` is where the new machine
    /// will reach this one; without it, the running node's listening address (a wildcard one read
    /// as this machine's first non-loopback IPv4 address).
    public func invite(
        store: any ReplicaStorage,
        name: String?,
        expiresIn seconds: Int,
        address: PeerAddress?
    ) throws -> Invitation {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot admit others: it does not hold the cluster's authority key; run 'lansync invite' on the machine that created the cluster (or another that holds the key)"
            )
        }
        // As long as `status` waits: a busy node is running, not absent, and its address is wanted.
        let answer = runningNodeStatus()
        let status: NodeStatus? = if case .answered(let status) = answer { status } else { nil }
        let nodeRunning = if case .noNode = answer { false } else { true }
        let reach = address ?? status?.listen.flatMap(PeerAddress.init(parsing:)).map(Self.reachable)
        let now = WallClock.milliseconds
        let expiresAt = now + UInt64(seconds) * 1000
        let secret = InviteCode.newSecret()
        try store.addInvite(secret: secret, name: name, now: now, expiresAt: expiresAt)
        let code = InviteCode(clusterID: authority.clusterID, secret: secret, host: reach?.host, port: reach?.port)
        return Invitation(code: code, name: name, expiresAt: expiresAt, nodeRunning: nodeRunning)
    }

    /// A listening address as another machine can dial it: a wildcard host becomes this
    /// machine's first non-loopback IPv4 address, else (an IPv6-only machine) its first global
    /// or unique-local IPv6 one.
    static func reachable(_ address: PeerAddress) -> PeerAddress {
        guard address.host == "0.0.0.0" || address.host == "::" else { return address }
        let devices = (try? System.enumerateDevices()) ?? []
        let ipv4 = devices.compactMap { device -> String? in
            guard case .v4? = device.address, let ip = device.address?.ipAddress, !ip.hasPrefix("127.") else {
                return nil
            }
            return ip
        }
        let ipv6 = devices.compactMap { device -> String? in
            guard address.host == "::", case .v6? = device.address, let ip = device.address?.ipAddress,
                ip != "::1", AddressPreference.rank(ip) == 0
            else { return nil }
            return ip
        }
        return (ipv4.first ?? ipv6.first).map { PeerAddress(host: $0, port: address.port) } ?? address
    }

    /// Creates this directory as a new member of the cluster the invite names: makes a key here,
    /// asks the inviter to certify it, and writes the directory with the authority's certificate
    /// alone. Refuses a directory that holds a replica.
    ///
    /// The inviter is `address` if given, else the address in the code; if that cannot be reached
    /// (the machine moved, or the code has none), the nodes of the code's cluster that announce
    /// themselves on mDNS within `search`, each as it appears, until one admits this machine (the
    /// pinned cluster is checked on each; only the machine that made the invite accepts it).
    public func join(
        code: InviteCode,
        name: String?,
        address: PeerAddress?,
        historyLimit: Int,
        search: Duration = .seconds(6)
    ) async throws -> Initialised {
        try refuseExistingReplica()
        // No name chosen: ask for none, and take the one the invite was made with (`invite
        // --name`), else this machine's host name (``finish``).
        let nodeName = name ?? ""
        let key = NodeKey()
        let request = JoinRequest(
            name: nodeName,
            publicKey: key.publicKeyDER,
            proof: code.proof(publicKey: key.publicKeyDER, name: nodeName)
        )
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let made = try await join(
                request,
                code: code,
                key: key,
                name: nodeName,
                address: address,
                historyLimit: historyLimit,
                search: search,
                group: group
            )
            try? await group.shutdownGracefully()
            return made
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private func join(
        _ request: JoinRequest,
        code: InviteCode,
        key: NodeKey,
        name nodeName: String,
        address: PeerAddress?,
        historyLimit: Int,
        search: Duration,
        group: any EventLoopGroup
    ) async throws -> Initialised {
        let coded = code.host.flatMap { host in code.port.map { PeerAddress(host: host, port: $0) } }
        var unreachable: [String] = []
        if let target = address ?? coded {
            switch await Self.ask(target, request, code: code, group: group) {
            case .answered(let answer):
                return try finish(
                    answer,
                    from: target,
                    key: key,
                    name: nodeName,
                    code: code,
                    historyLimit: historyLimit
                )
            case .unreachable(let why):
                if address != nil { throw HostError("cannot join through \(target): \(why)") }
                unreachable.append("not at \(target) (\(why))")
            }
        }
        // Not where the code says (or it says nowhere): ask the cluster's nodes on the LAN, each as
        // it appears, until one admits this machine or the time is up.
        var refusals: [String] = []
        let found = await Self.searchLAN(request, code: code, skipping: coded, within: search, group: group) {
            refusals.append($0)
        }
        if let found {
            return try finish(
                found.answer,
                from: found.address,
                key: key,
                name: nodeName,
                code: code,
                historyLimit: historyLimit
            )
        }
        let seconds = Int(search.components.seconds)
        if refusals.isEmpty {
            throw HostError(
                (unreachable.isEmpty
                    ? "the invite code carries no address, and "
                    : "cannot reach the inviting machine: \(unreachable.joined()); and ")
                    + "no node of its cluster announced itself on mDNS within \(seconds) s: is its 'lansync node' running? Give its address with --address HOST:PORT"
            )
        }
        throw HostError(
            "no machine admitted this one: \((unreachable + refusals).joined(separator: "; ")). Ask the inviting machine for a new code, or give its address with --address HOST:PORT"
        )
    }

    /// Asks the nodes of the code's cluster that announce themselves on mDNS within `search`,
    /// each as it appears (but `skipping`, asked already), until one admits this machine: its
    /// address and acceptance; nil if none did. Says why of each that did not, through `refused`.
    private static func searchLAN(
        _ request: JoinRequest,
        code: InviteCode,
        skipping: PeerAddress?,
        within search: Duration,
        group: any EventLoopGroup,
        refused: (String) -> Void
    ) async -> (address: PeerAddress, answer: Message)? {
        let discovery = AvahiDiscovery()
        let events = discovery.browse(cluster: { code.pins($0) }, protocolMajor: ProtocolVersion.current.major)
        let timer = Task {
            try? await Task.sleep(for: search)
            discovery.stop()  // ends the events
        }
        defer {
            timer.cancel()
            discovery.stop()
        }
        var asked = Set(skipping.map { [$0] } ?? [])
        for await event in events {
            guard case .found(let peer) = event else { continue }
            let candidate = PeerAddress(host: peer.host, port: peer.port)
            guard asked.insert(candidate).inserted else { continue }
            switch await ask(candidate, request, code: code, group: group) {
            case .answered(.joinAccepted(let accepted)):
                return (candidate, .joinAccepted(accepted))
            case .answered(.error(let error)):
                refused("\(candidate) refused: \(error.message)")
            case .answered(let other):
                refused("\(candidate) answered with a \(other.kind) message")
            case .unreachable(let why):
                refused("not at \(candidate) (\(why))")
            }
        }
        return nil
    }

    /// What asking one machine gave: its answer, or why it could not be asked.
    enum Attempt {
        case answered(Message)
        case unreachable(String)
    }

    static func ask(
        _ target: PeerAddress,
        _ request: JoinRequest,
        code: InviteCode,
        group: any EventLoopGroup
    ) async
        -> Attempt
    {
        do {
            return .answered(
                try await JoinDialer.request(
                    request,
                    host: target.host,
                    port: target.port,
                    pins: { code.pins($0) },
                    group: group
                )
            )
        } catch {
            return .unreachable("\(error)")
        }
    }

    /// Writes the new member's directory from the inviter's answer.
    private func finish(
        _ answer: Message,
        from target: PeerAddress,
        key: NodeKey,
        name nodeName: String,
        code: InviteCode,
        historyLimit: Int
    ) throws -> Initialised {
        switch answer {
        case .joinAccepted(let accepted):
            let authority = try ClusterCertificate(der: accepted.authority)
            guard code.pins(authority.clusterID) else {
                throw HostError(
                    "the inviter at \(target) answered for another cluster than the code's: ask for a new code"
                )
            }
            let chosen = nodeName.isEmpty ? accepted.name : nodeName
            let identity = try key.identity(
                issued: accepted.certificate,
                by: authority,
                name: chosen.isEmpty ? ProcessInfo.processInfo.hostName : chosen
            )
            return try create(
                identity: identity,
                clusterPEM: try authority.pem(),
                clusterID: authority.clusterID,
                historyLimit: historyLimit
            )
        case .error(let error):
            throw HostError("the inviter at \(target) refused: \(error.message)")
        default:
            throw HostError("the machine at \(target) answered with a \(answer.kind) message: is it a lansync node?")
        }
    }
}

/// Revoking a member, and the list of members (Docs/SECURITY.md, "Revoking a machine").
extension DataDirectory {
    /// One machine this replica knows of, for `lansync members`.
    public struct Member: Sendable {
        public let nodeID: NodeID
        public let name: String?
        /// Whether it is this directory's own node.
        public let isThisNode: Bool
        /// Its revocation, if it was revoked (a valid one: signed by the cluster's authority).
        public let revocation: Revocation?
        /// Set when this machine admitted it with an invite: when (Unix ms).
        public let admittedHere: UInt64?
        /// Its admission, if it joined with an invite and the admission reached this machine:
        /// when (Unix ms) and which admitting machine let it in.
        public let admission: Admission?
        /// Unix ms of the last time both sides were up to date, if they ever were.
        public let lastSync: UInt64?
        /// Whether it is one of the admitting machines the latest `cluster admitters` named; nil
        /// when none was ever made (every machine initialised with the cluster file admits).
        public let admits: Bool?
        /// Unix ms of its last session anywhere in the cluster, as far as this replica heard.
        public var seenAt: UInt64? = nil
        /// Set once `lansync members forget` said it is gone for good (Unix ms).
        public var forgottenAt: UInt64? = nil
        /// Its latest role statement, if one was ever made (a member without one is a writer).
        public var roleStatement: RoleStatement? = nil
        /// What it may do (Docs/SECURITY.md, "Roles").
        public var role: MemberRole { roleStatement?.role ?? .writer }
        /// Silent for longer than the cluster's away window: it no longer holds the stable
        /// frontier back (Docs/MERGE.md, "Causal stability and collection").
        public var isAway = false

        /// `active`, `revoked`, `away` or `forgotten`.
        public var state: String {
            if revocation != nil { return "revoked" }
            if forgottenAt != nil { return "forgotten" }
            return isAway ? "away" : "active"
        }
    }

    /// The cluster statements this replica holds that its authority signed.
    func statements(
        store: any ReplicaStorage
    ) throws -> (
        revoked: [NodeID: Revocation], admitters: AdmitterSet?, admissions: [NodeID: Admission],
        roles: [NodeID: RoleStatement]
    ) {
        let trust = try clusterCertificate()
        var revoked: [NodeID: Revocation] = [:]
        var admitters: AdmitterSet?
        var admissions: [NodeID: Admission] = [:]
        var roles: [NodeID: RoleStatement] = [:]
        for record in try store.statementRecords() {
            guard let statement = ClusterStatement(encoded: record), statement.isSigned(by: trust) else { continue }
            switch statement {
            case .revocation(let revocation):
                if revoked[revocation.node] == nil { revoked[revocation.node] = revocation }
            case .admitters(let set):
                if set.supersedes(admitters) { admitters = set }
            case .admission(let admission):
                if admissions[admission.node] == nil { admissions[admission.node] = admission }
            case .settings, .signedWrites:
                // The replica's settings (meta) follow the latest; `cluster set` shows them.
                continue
            case .role(let role):
                // Every part of a statement names its role: the latest part-0 is the latest role.
                if role.cut.part == 0, role.supersedes(roles[role.node]) { roles[role.node] = role }
            }
        }
        return (revoked, admitters, admissions, roles)
    }

    /// Every member this replica knows of: itself, the peers it met, the machines it admitted,
    /// those whose admission reached it, and the revoked, with the revoked ones' reasons.
    public func members(store: any ReplicaStorage) throws -> [Member] {
        let info = try store.info()
        let (revoked, admitters, admissions, roles) = try statements(store: store)
        var peers: [NodeID: PeerRecord] = [:]
        for peer in try store.peers() where peers[peer.nodeID] == nil { peers[peer.nodeID] = peer }
        var admitted: [NodeID: (name: String?, at: UInt64)] = [:]
        for invite in try store.invites() {
            if let node = invite.usedBy, let at = invite.usedAt { admitted[node] = (invite.name, at) }
        }
        let reports = Dictionary(try store.memberReports().map { ($0.nodeID, $0) }) { a, _ in a }
        let awayAfter = try store.collectionSettings().awayAfter
        let now = WallClock.milliseconds
        let knownNames = try store.nodeNames()
        let ids = Set([info.nodeID]).union(peers.keys).union(admitted.keys).union(revoked.keys)
            .union(admissions.keys).union(reports.keys)
        let members = ids.map { id -> Member in
            let name: String? =
                id == info.nodeID
                ? info.nodeName
                : peers[id]?.name ?? admissions[id]?.name ?? admitted[id]?.name ?? revoked[id]?.name
            var member = Member(
                nodeID: id,
                name: name ?? knownNames[id],
                isThisNode: id == info.nodeID,
                revocation: revoked[id],
                admittedHere: admitted[id]?.at,
                admission: admissions[id],
                lastSync: peers[id]?.lastSync,
                admits: admitters.map { $0.nodes.contains(id) }
            )
            member.roleStatement = roles[id]
            if let report = reports[id] {
                member.seenAt = report.at
                member.forgottenAt = report.forgottenAt
                member.isAway = report.at &+ awayAfter < now
            }
            return member
        }
        // This node first, then by name.
        return members.sorted { a, b in
            if a.isThisNode != b.isThisNode { return a.isThisNode }
            if (a.name ?? "") != (b.name ?? "") { return (a.name ?? "") < (b.name ?? "") }
            return a.nodeID < b.nodeID
        }
    }

    /// Revokes the member named by `target` (its node id, a unique start of it, or its name):
    /// signs the revocation with the authority's key, keeps it in the replica, and nudges the
    /// running node, which refuses the member and passes the revocation to every peer.
    public func revoke(store: any ReplicaStorage, target: String, reason: String) throws -> Revocation {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot revoke members: it does not hold the cluster's authority key; run 'lansync revoke' on a machine that does (the one that created the cluster)"
            )
        }
        let member = try self.member(named: target, store: store)
        guard !member.isThisNode else {
            throw HostError("'\(target)' is this machine: revoke it from another admitting machine, or stop its node")
        }
        guard TerminalText.isPlain(reason) else {
            throw HostError(
                "a reason may not hold control characters (line breaks, tabs, escape sequences): give it on one line"
            )
        }
        if let done = member.revocation { return done }
        // The point the revocation names: what this replica holds of each of the node's writers.
        let held = try store.versionVector()
        let parts = try Revocation.make(
            node: member.nodeID,
            name: member.name ?? "",
            reason: reason,
            at: WallClock.milliseconds,
            by: try store.info().nodeID,
            keeping: Dictionary(uniqueKeysWithValues: held.nodes.map { ($0, held[$0]) }),
            authority: authority
        )
        try store.addStatements(
            parts.map { (ClusterStatement.revocation($0).key, ClusterStatement.revocation($0).encoded) }
        )
        ControlClient.statementsChanged(path: controlSocketPath)
        return parts[0]
    }

    /// The one member `target` names: its name, its node id, or a unique start of the id.
    func member(named target: String, store: any ReplicaStorage) throws -> Member {
        let members = try self.members(store: store)
        let wanted = target.lowercased()
        var matches = members.filter { $0.name == target || $0.nodeID.text == wanted }
        if matches.isEmpty, wanted.count >= 4 { matches = members.filter { $0.nodeID.text.hasPrefix(wanted) } }
        guard matches.count <= 1 else {
            throw HostError(
                "'\(target)' names \(matches.count) members (\(matches.map { $0.nodeID.short }.joined(separator: ", "))): give more of the node id"
            )
        }
        if matches.isEmpty, let id = NodeID(text: wanted) {
            // A machine this one never met: its full node id is enough.
            return Member(
                nodeID: id,
                name: nil,
                isThisNode: false,
                revocation: nil,
                admittedHere: nil,
                admission: nil,
                lastSync: nil,
                admits: nil
            )
        }
        guard let member = matches.first else {
            throw HostError(
                "no member named or with id '\(target)' is known here: 'lansync members' lists them (a machine this one never met is named by its full node id)"
            )
        }
        return member
    }

    /// Names the machines that may hold the cluster authority's key (each by name, node id or a
    /// unique start of it; this machine among them): signs the set, keeps it and nudges the
    /// node, which passes it on; every other member that holds the key removes it from its data
    /// directory when the set reaches it. How a cluster made before invites moves to them.
    public func setAdmitters(store: any ReplicaStorage, targets: [String]) throws -> AdmitterSet {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot name the admitting machines: it does not hold the cluster's authority key; run it on one that does"
            )
        }
        let info = try store.info()
        let nodes = try targets.map { try member(named: $0, store: store).nodeID }
        guard nodes.contains(info.nodeID) else {
            throw HostError(
                "name this machine (\(info.nodeName)) among the admitting machines: its key is the one that signs the set, and it keeps it; to move the authority elsewhere, name this machine with the other, then run it again there without this one"
            )
        }
        guard nodes.count <= AdmitterSet.maxNodes else {
            throw HostError("at most \(AdmitterSet.maxNodes) admitting machines")
        }
        let latest = try statements(store: store).admitters
        let set = try AdmitterSet.make(
            nodes: nodes,
            at: try Self.stamp(after: latest?.at, what: "set of admitting machines"),
            by: info.nodeID,
            authority: authority
        )
        let statement = ClusterStatement.admitters(set)
        try store.addStatements([(statement.key, statement.encoded)])
        ControlClient.statementsChanged(path: controlSocketPath)
        return set
    }

    /// Signs new collection settings with the authority's key (`lansync cluster set`), keeps them
    /// (the statement, and the replica's settings) and nudges the running node, which passes them
    /// to every member.
    public func setCollectionSettings(store: any ReplicaStorage, _ settings: CollectionSettings) throws {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot change the cluster's settings: it does not hold the cluster's authority key; run 'lansync cluster set' on a machine that does (the one that created the cluster)"
            )
        }
        let statement = ClusterStatement.settings(
            try ClusterSettings.make(
                trashWindow: settings.trashWindow,
                awayAfter: settings.awayAfter,
                at: try Self.stamp(after: try latestSettings(store: store)?.at, what: "settings"),
                by: try store.info().nodeID,
                authority: authority
            )
        )
        try store.addStatements([(statement.key, statement.encoded)])
        try store.setCollectionSettings(settings)
        ControlClient.statementsChanged(path: controlSocketPath)
    }

    /// The stamp for a statement that replaces one stamped `latest` (``ClusterStatement/stamp(now:after:)``).
    static func stamp(after latest: UInt64?, what: String) throws(HostError) -> UInt64 {
        guard let stamp = ClusterStatement.stamp(now: WallClock.milliseconds, after: latest) else {
            throw HostError(
                "the cluster's latest \(what) carry the largest time there is (a machine's clock was set to the end of time when it made them): no newer ones can be ordered after them; make a new cluster, or keep these"
            )
        }
        return stamp
    }

    /// The latest collection settings this replica holds that its authority signed.
    func latestSettings(store: any ReplicaStorage) throws -> ClusterSettings? {
        let trust = try clusterCertificate()
        var latest: ClusterSettings?
        for record in try store.statementRecords() {
            guard case .settings(let settings)? = ClusterStatement(encoded: record), settings.isSigned(by: trust),
                settings.supersedes(latest)
            else { continue }
            latest = settings
        }
        return latest
    }

    /// Rewrites the cluster file with the authority's certificate alone (the node calls it when
    /// a set of admitting machines leaves this one out).
    public func dropAuthorityKey() throws {
        try SecretFile.write(try clusterCertificate().pem(), to: clusterPath, replace: true)
    }

    /// The cluster authority's certificate this directory holds.
    func clusterCertificate() throws(HostError) -> ClusterCertificate {
        do { return try ClusterCertificate(pem: try String(contentsOfFile: clusterPath, encoding: .utf8)) } catch {
            throw HostError("cannot read \(clusterPath): restore it from a backup")
        }
    }
}
