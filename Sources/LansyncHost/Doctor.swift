import Foundation
public import LansyncDiscovery
import LansyncJSON

/// One thing `lansync doctor` checked, in plain words, with what to do when it is wrong.
public struct DoctorFinding: Sendable, Equatable {
    public enum Verdict: String, Sendable {
        /// Works.
        case ok
        /// Worth knowing, not wrong (no node running, a member revoked, another cluster's advert).
        case note
        /// Keeps machines from finding or reaching each other.
        case problem
    }

    /// What it is about: `node`, `mdns`, `advert`, or a member's name (or an address).
    public var topic: String
    public var verdict: Verdict
    public var says: String
    /// What to do, when there is something to do.
    public var fix: String?

    public init(_ topic: String, _ verdict: Verdict, _ says: String, fix: String? = nil) {
        self.topic = topic
        self.verdict = verdict
        self.says = says
        self.fix = fix
    }

    var json: JSON {
        .object([
            ("topic", .string(topic)), ("verdict", .string(verdict.rawValue)), ("says", .string(says)),
            ("fix", fix.map(JSON.string) ?? .null),
        ])
    }
}

/// What `lansync doctor` runs (Docs/DISCOVERY.md, "When a peer does not appear"): the node, the
/// Avahi daemon and D-Bus, the adverts on the LAN (this node's own among them), and every address
/// known for every member, tried over TCP. ``findings(status:members:survey:probes:)`` is pure:
/// what was gathered in, findings out.
public enum Doctor {
    /// How long the survey listens for adverts, and how long each address may take to answer.
    public static let listening: Duration = .seconds(3)
    public static let probeTimeout: Duration = .seconds(2)

    /// The addresses worth trying: every peer's address the node knows, and every advert of a
    /// member of this cluster seen on the LAN (not this node's own), each once.
    public static func addresses(status: NodeStatus, survey: Survey) -> [String] {
        var seen: [String] = []
        for address in dialled(status.peers).flatMap(known) + adverts(of: status, in: survey).map(\.address)
        where !seen.contains(address) {
            seen.append(address)
        }
        return seen
    }

    /// The findings, in the order a person would check them.
    public static func findings(
        status: NodeStatus,
        members: [DataDirectory.Member],
        survey: Survey,
        probes: [String: ProbeResult]
    ) -> [DoctorFinding] {
        var findings = [nodeFinding(status)]
        // A node told not to use mDNS is judged by what it was asked to do: the daemon and the
        // adverts are nothing to it.
        if status.mdns == .off {
            findings.append(
                DoctorFinding(
                    "mdns",
                    .note,
                    "off on purpose (--no-mdns): the Avahi daemon and the adverts are not checked; peers come from --peer, from gossip and from those that dial in"
                )
            )
        } else {
            findings.append(daemonFinding(status, survey))
            findings += advertFindings(status, survey)
        }
        if let relay = relayFinding(status) { findings.append(relay) }
        findings += memberFindings(status: status, members: members, survey: survey, probes: probes)
        return findings
    }

    /// Gathers everything (the survey, then every address tried) and judges it.
    public static func run(_ replica: LocalReplica) async throws -> [DoctorFinding] {
        let status = try replica.status()
        let members = (try? replica.members()) ?? []
        let survey = status.mdns == .off ? Survey() : await AvahiDiscovery.survey(for: listening)
        var probes: [String: ProbeResult] = [:]
        await withTaskGroup(of: (String, ProbeResult).self) { group in
            for address in addresses(status: status, survey: survey) {
                group.addTask { (address, AddressProbe.probe(address, timeout: probeTimeout)) }
            }
            for await (address, result) in group { probes[address] = result }
        }
        return findings(status: status, members: members, survey: survey, probes: probes)
    }

    /// `{"findings": [...], "problems": N}`: what `doctor --json` prints.
    public static func jsonText(_ findings: [DoctorFinding]) -> String {
        JSON.object([
            ("findings", .array(findings.map(\.json))),
            ("problems", .integer(Int64(findings.filter { $0.verdict == .problem }.count))),
        ]).text
    }

    // MARK: The checks

    static func nodeFinding(_ status: NodeStatus) -> DoctorFinding {
        guard status.running else {
            return DoctorFinding(
                "node",
                .note,
                "no node runs on this data directory: it advertises nothing and syncs with no one",
                fix: "start it with 'lansync node' (add '--peer HOST:PORT' for machines mDNS cannot reach)"
            )
        }
        guard status.answering else {
            return DoctorFinding(
                "node",
                .problem,
                "a node runs on this data directory but did not answer within \(StatusWait.seconds) s: it is busy or stuck",
                fix: "look at its log; if it stays silent, stop it (SIGTERM) and start it again"
            )
        }
        let listen = status.listen ?? "?"
        let host =
            listen.hasPrefix("[")
            ? String(listen.dropFirst().prefix { $0 != "]" }) : String(listen.prefix { $0 != ":" })
        if isLoopback(host) {
            let farPeers = dialled(status.peers).flatMap(known).filter {
                !isLoopback(AddressProbe.split($0)?.host ?? $0)
            }
            let advertised = status.mdns != .off
            guard advertised || !farPeers.isEmpty else {
                return DoctorFinding(
                    "node",
                    .ok,
                    "running, listening on \(listen) only, with mDNS off: only nodes on this machine reach it, and every peer it was given is on this machine"
                )
            }
            let why =
                advertised
                ? "its advert names a port only this machine can dial"
                : "it was given peers on other machines (\(farPeers.joined(separator: ", "))), which cannot dial back"
            return DoctorFinding(
                "node",
                .problem,
                "running, but listening on \(listen) only: no other machine can reach it, and \(why)",
                fix:
                    "restart it without --listen (the default, [::]:7420, takes peers on every interface), or with this machine's LAN address"
            )
        }
        return DoctorFinding(
            "node",
            .ok,
            "running, listening on \(listen); its mDNS: \(status.mdns?.description ?? "?")"
        )
    }

    static func daemonFinding(_ status: NodeStatus, _ survey: Survey) -> DoctorFinding {
        if let why = survey.unavailable {
            if survey.noDBus {
                return DoctorFinding(
                    "mdns",
                    .problem,
                    "the system D-Bus does not answer, so no Avahi daemon can: mDNS discovery cannot work here",
                    fix:
                        "start D-Bus and the Avahi daemon ('sudo systemctl start dbus avahi-daemon'), or name peers with '--peer HOST:PORT'"
                )
            }
            let running = why.contains("not running")
            return DoctorFinding(
                "mdns",
                .problem,
                running
                    ? "the Avahi daemon is not running: this machine neither advertises nor finds anyone"
                    : "the Avahi daemon does not answer (\(why)): this machine neither advertises nor finds anyone",
                fix:
                    "start it ('sudo systemctl start avahi-daemon'; Debian: 'sudo apt-get install avahi-daemon'), or name peers with '--peer HOST:PORT'"
            )
        }
        let count = survey.sightings.count
        let says = "the Avahi daemon answers; \(count) lansync advert(s) seen in \(listening.components.seconds) s"
        return DoctorFinding("mdns", .ok, says)
    }

    /// This node's own advert (is it visible to itself?), and adverts of other clusters and of
    /// services that are not lansync's.
    static func advertFindings(_ status: NodeStatus, _ survey: Survey) -> [DoctorFinding] {
        guard survey.unavailable == nil else { return [] }
        var findings: [DoctorFinding] = []
        let own = survey.sightings.filter { $0.node?.text == status.nodeID }
        if status.running, status.mdns == .running {
            if own.isEmpty {
                findings.append(
                    DoctorFinding(
                        "advert",
                        .problem,
                        "this node's own advert is not seen: the daemon has not published it, or multicast does not come back on any interface",
                        fix:
                            "see 'lansync status' (mDNS) and the node's log; check that the interface is up and allows multicast (Docs/DISCOVERY.md)"
                    )
                )
            } else {
                findings.append(DoctorFinding("advert", .ok, "this node's own advert is seen: \(places(own))"))
            }
        }
        let others = survey.sightings.filter { $0.cluster != nil && $0.cluster?.text != status.clusterID }
        for (cluster, sightings) in Dictionary(grouping: others, by: { $0.cluster!.text }).sorted(by: {
            $0.key < $1.key
        }) {
            findings.append(
                DoctorFinding(
                    "advert",
                    .note,
                    "\(places(sightings)) advertise(s) a node of another cluster (\(cluster.prefix(7))): ignored; it is no member of this one",
                    fix: "to sync with it, make it join this cluster ('lansync invite' here, 'lansync join' there)"
                )
            )
        }
        let strangers = survey.sightings.filter { $0.node == nil }
        if !strangers.isEmpty {
            findings.append(
                DoctorFinding(
                    "advert",
                    .note,
                    "\(places(strangers)): service(s) of lansync's type without its TXT record: ignored"
                )
            )
        }
        return findings
    }

    /// Whether a node given relays (`--relay`) has a session with one now: it keeps one at all
    /// times the relay can be reached (Docs/RELAY.md), so none is a problem, with the reason the
    /// node last saw. Nil for a node given no relay, or none running.
    static func relayFinding(_ status: NodeStatus) -> DoctorFinding? {
        guard status.running, status.answering, let relays = status.relays else { return nil }
        // A node from before issue 63 does not say.
        guard let connected = relays.connected else { return nil }
        if connected { return DoctorFinding("relay", .ok, "connected to \(relays.current)") }
        let reason = relays.problem?.reason ?? "no answer yet"
        let since = relays.problem?.since.map { " since \($0)" } ?? ""
        let fix: String
        if reason.contains("sessions already") {
            fix =
                "the relay serves as many sessions as its --max-sessions allows: raise it there (it needs one per member)"
        } else if reason.contains("put back from a copy") {
            fix =
                "the relay's replica, or this one, was put back from a copy older than the away window and waits for a current member: 'lansync status' on each says 'stale since'; if no member is current, see 'lansync backup accept --help' (Docs/MERGE.md, \"Stale or away\")"
        } else if reason.contains("cannot connect") {
            fix =
                "check that 'lansync relay' runs at \(relays.current) and that this machine can reach that address (a firewall, a VPN that is down)"
        } else {
            let after =
                reason.hasPrefix("\(relays.current): ") ? String(reason.dropFirst(relays.current.count + 2)) : reason
            fix = Self.fix(refusal: after) ?? "look at this node's log and the relay's for the session's end"
        }
        return DoctorFinding(
            "relay",
            .problem,
            "not connected to its relay \(relays.current)\(since): \(reason); the node dials again by itself",
            fix: fix
        )
    }

    /// Every member but this node: revoked ones said so, the others with each address tried.
    static func memberFindings(
        status: NodeStatus,
        members: [DataDirectory.Member],
        survey: Survey,
        probes: [String: ProbeResult]
    ) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        let advertised = adverts(of: status, in: survey)
        for id in judged(status: status, members: members, advertised: advertised) {
            let member = members.first { $0.nodeID.text == id }
            let peer = status.peers.first { $0.nodeID == id }
            let name = member?.name ?? peer?.name ?? String(id.prefix(7))
            if let revocation = member?.revocation {
                findings.append(
                    DoctorFinding(
                        name,
                        .note,
                        "revoked at \(WallClock.iso8601(milliseconds: revocation.at))\(revocation.reason.isEmpty ? "" : " (\(revocation.reason))"): its connections are refused on purpose"
                    )
                )
                continue
            }
            var addresses: [String] = []
            for address in dialled(status.peers).filter({ $0.nodeID == id }).flatMap(known)
            where !addresses.contains(address) {
                addresses.append(address)
            }
            for sighting in advertised where sighting.node == id && !addresses.contains(sighting.address) {
                addresses.append(sighting.address)
            }
            findings += reach(
                name: name,
                peer: peer,
                addresses: addresses,
                advertised: advertised,
                probes: probes,
                unconnected: unconnected(status)
            )
            if let finding = clockFinding(name: name, offset: peer?.clockOffsetMs) { findings.append(finding) }
        }
        // Addresses given with --peer whose node never answered: no id to name them by.
        for peer in dialled(status.peers) where peer.nodeID == nil {
            guard let address = peer.address else { continue }
            findings += reach(
                name: address,
                peer: peer,
                addresses: [address],
                advertised: [],
                probes: probes,
                unconnected: unconnected(status)
            )
        }
        return findings
    }

    /// The node ids doctor judges: every member but this node, then any other node the status
    /// or an advert names. A member's later writer (after a restore or a rollback) is that
    /// member, not another (an older node's status may list it apart).
    static func judged(
        status: NodeStatus,
        members: [DataDirectory.Member],
        advertised: [(node: String, address: String)]
    ) -> [String] {
        var ids = members.filter { !$0.isThisNode }.map(\.nodeID.text)
        let memberIDs = members.map(\.nodeID)
        func anotherWriterOfAMember(_ id: String) -> Bool {
            guard let writer = NodeID(text: id) else { return false }
            return memberIDs.contains { writer != $0 && writer.isWriter(of: $0) }
        }
        for id in status.peers.compactMap(\.nodeID) + advertised.map(\.node)
        where !ids.contains(id) && id != status.nodeID && !anotherWriterOfAMember(id) {
            ids.append(id)
        }
        return ids
    }

    /// What an address that answers but has no session is said to be waiting for: the node's
    /// dial when one runs and answered; otherwise the peers come from the replica file, which
    /// cannot say whether a session is up.
    static func unconnected(_ status: NodeStatus) -> String {
        if !status.running { return ", no node runs here to connect to it" }
        if !status.answering { return "; this node did not answer, so whether they are connected is not known" }
        return ", not connected yet (the node dials within seconds)"
    }

    static func reach(
        name: String,
        peer: NodeStatus.Peer?,
        addresses: [String],
        advertised: [(node: String, address: String)],
        probes: [String: ProbeResult],
        unconnected: String
    ) -> [DoctorFinding] {
        if peer?.connected == true {
            let seen = addresses.filter { address in advertised.contains { $0.address == address } }
            let where_ = seen.isEmpty ? "" : "; advertised on the LAN at \(seen.joined(separator: ", "))"
            return [DoctorFinding(name, .ok, "connected (\(peer?.path.rawValue ?? "direct"))\(where_)")]
        }
        guard !addresses.isEmpty else {
            return [
                DoctorFinding(
                    name,
                    .problem,
                    "no address known: it is not advertised here and was never given",
                    fix:
                        "if it is on another network or mDNS cannot reach it, give its address with '--peer HOST:PORT', or a relay both reach ('--relay')"
                )
            ]
        }
        let last = peer?.lastError.map { "; the node's last attempt: \($0)" } ?? ""
        return addresses.map { address in
            let heard = advertised.contains { $0.address == address } ? " (advertised on the LAN)" : ""
            return probeFinding(
                name: name,
                address: address,
                result: probes[address],
                peer: peer,
                last: last,
                heard: heard,
                unconnected: unconnected
            )
        }
    }

    /// What to do about a peer that answers but refuses a session, by the code its last error
    /// starts with (Docs/PROTOCOL.md, "Errors"); nil for another error.
    static func fix(refusal error: String) -> String? {
        let code = error.prefix { $0 != ":" && $0 != " " }
        switch code {
        case "wrong-cluster":
            return
                "it is a node of another cluster: to sync with it, make it join this one ('lansync invite' here, 'lansync join' there); otherwise remove its address"
        case "revoked":
            return
                "this cluster revoked one of the two: refused on purpose ('lansync members' says which); a machine revoked by mistake joins again with a new invite"
        case "identity-mismatch", "duplicate-node-id":
            return
                "the address answers as another node than the one named, or as this node itself (a copied data directory): check the address, and 'lansync status' on the machine there"
        case "protocol-version":
            return "the two run lansync versions that cannot talk: upgrade the older one"
        case "away":
            return
                "one of the two was silent past the cluster's away window: it rejoins from a snapshot by itself on its next session (Docs/MERGE.md, \"Coming back after being away\")"
        default:
            return nil
        }
    }

    /// What one address tried says, with the node's `last` error, whether it was `heard`
    /// advertised, and (``unconnected(_:)``) why no session is shown when there is no error.
    static func probeFinding(
        name: String,
        address: String,
        result: ProbeResult?,
        peer: NodeStatus.Peer?,
        last: String,
        heard: String,
        unconnected: String
    ) -> DoctorFinding {
        let port = AddressProbe.split(address)?.port ?? 7420
        switch result {
        case .open?:
            return DoctorFinding(
                name,
                peer?.lastError == nil ? .ok : .problem,
                "\(address)\(heard) answers on TCP\(last.isEmpty ? unconnected : last)",
                fix: peer?.lastError.flatMap(fix(refusal:))
            )
        case .refused?:
            return DoctorFinding(
                name,
                .problem,
                "nothing listens at \(address)\(last)",
                fix: "start 'lansync node' on it, or check the port it listens on ('lansync status' there)"
            )
        case .timedOut?:
            return DoctorFinding(
                name,
                .problem,
                "no answer from \(address) within \(probeTimeout.components.seconds) s\(last)",
                fix:
                    "a firewall drops TCP port \(port) on the way (allow it, e.g. 'sudo nft add rule inet filter input tcp dport \(port) accept' there), or the machine is off or asleep"
            )
        case .noRoute(let why)?:
            return DoctorFinding(
                name,
                .problem,
                "no route to \(address) (\(why))\(last)",
                fix:
                    "it is on a network this machine cannot reach: connect the two networks, or use a relay both reach ('--relay')"
            )
        case .unresolved(let why)?, .failed(let why)?:
            return DoctorFinding(name, .problem, "\(address): \(why)\(last)")
        case nil:
            return DoctorFinding(name, .note, "\(address) was not tried\(last)")
        }
    }

    /// A peer whose clock is a minute or more off this machine's (as its last hello said): a
    /// note; a day or more, a problem (the hybrid clock follows a clock ahead by at most a day,
    /// and the trash and away windows are read on each machine's own clock).
    static func clockFinding(name: String, offset: Int?) -> DoctorFinding? {
        guard let offset, offset.magnitude >= 60_000 else { return nil }
        let direction = offset > 0 ? "ahead of" : "behind"
        let size = offset.magnitude
        let words =
            size >= 86_400_000
            ? "\(size / 86_400_000) day(s)"
            : size >= 3_600_000 ? "\(size / 3_600_000) hour(s)" : "\(size / 60_000) minute(s)"
        let says = "its clock is \(words) \(direction) this machine's (at its last hello)"
        guard size >= 86_400_000 else { return DoctorFinding(name, .note, says) }
        return DoctorFinding(
            name,
            .problem,
            says
                + ": edits made there are ordered by a wrong time, and deleted items and away members are judged early or late",
            fix: "set both clocks right and keep them so ('timedatectl set-ntp true' on each machine)"
        )
    }

    // MARK: Helpers

    /// True for a host only this machine can dial (127.0.0.0/8, ::1, localhost).
    static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host == "localhost"
    }

    /// The addresses the node knows a peer at: the one it shows, and every one it was advertised at.
    static func known(_ peer: NodeStatus.Peer) -> [String] {
        (peer.address.map { [$0] } ?? []) + peer.advertised.filter { $0 != peer.address }
    }

    /// The peers whose address is one to dial: not those that dialled this node (their address is
    /// the port their connection came from).
    static func dialled(_ peers: [NodeStatus.Peer]) -> [NodeStatus.Peer] {
        peers.filter { $0.source != .inbound }
    }

    /// The adverts of other members of this cluster (node id text, `HOST:PORT`), each once.
    static func adverts(of status: NodeStatus, in survey: Survey) -> [(node: String, address: String)] {
        var result: [(node: String, address: String)] = []
        for sighting in survey.sightings where sighting.cluster?.text == status.clusterID {
            guard let node = sighting.node?.text, node != status.nodeID else { continue }
            // A link-local IPv6 address is dialled through the interface it was seen on, as the
            // node does.
            let host =
                AddressPreference.isLinkLocal(sighting.host) ? "\(sighting.host)%\(sighting.interface)" : sighting.host
            let address = sighting.ipv6 ? "[\(host)]:\(sighting.port)" : "\(host):\(sighting.port)"
            if !result.contains(where: { $0.node == node && $0.address == address }) { result.append((node, address)) }
        }
        return result
    }

    static func places(_ sightings: [Sighting]) -> String {
        sightings.map {
            "\($0.ipv6 ? "[\($0.host)]" : $0.host):\($0.port) on \($0.interface) (\($0.ipv6 ? "IPv6" : "IPv4"))"
        }
        .joined(separator: ", ")
    }
}
