public import LansyncCore

/// What a node announces on the LAN: `_lansync._tcp` on `port`, with a TXT record naming its node,
/// its cluster and the protocol version.
public struct Advertisement: Sendable, Equatable {
    public var nodeID: NodeID
    public var clusterID: NodeID
    public var port: Int
    public var protocolMajor: UInt32
    /// The DNS-SD instance name (``instanceName(for:node:)``); Avahi renames it on a collision.
    public var name: String

    public init(nodeID: NodeID, clusterID: NodeID, port: Int, protocolMajor: UInt32, machineName: String = "") {
        self.nodeID = nodeID
        self.clusterID = clusterID
        self.port = port
        self.protocolMajor = protocolMajor
        name = Self.instanceName(for: machineName, node: nodeID)
    }

    /// The instance name a node advertises under (RFC 6763 §4.1.1: a name people read, chosen by
    /// them): the machine's name, as given at `init` or `join`, cut to the 63 bytes of a DNS
    /// label at a character's end; `lansync-NODEID` for a machine with no name. Who the node is
    /// is in the TXT record, never in this name: two machines may share a name, and the daemon
    /// then renames the later one ("kitchen #2").
    public static func instanceName(for machineName: String, node: NodeID) -> String {
        var name = ""
        var bytes = 0
        for character in machineName where !character.isNewline {
            bytes += character.utf8.count
            guard bytes <= 63 else { break }
            name.append(character)
        }
        return name.isEmpty ? "lansync-\(node.text)" : name
    }

    /// The DNS-SD service type.
    public static let serviceType = "_lansync._tcp"

    /// The TXT record: `node=`, `cluster=`, `proto=`.
    public var txt: [String] { ["node=\(nodeID.text)", "cluster=\(clusterID.text)", "proto=\(protocolMajor)"] }

    /// Reads a peer's TXT record; nil if it lacks a key lansync needs (a stranger's service).
    public static func peer(fromTXT entries: [String: String]) -> (node: NodeID, cluster: NodeID, proto: UInt32)? {
        guard let node = entries["node"].flatMap(NodeID.init(text:)),
            let cluster = entries["cluster"].flatMap(NodeID.init(text:)),
            let proto = entries["proto"].flatMap({ UInt32($0) })
        else { return nil }
        return (node, cluster, proto)
    }
}

/// A peer seen on the LAN. Only a hint: who it is gets proven by the TLS handshake.
public struct DiscoveredPeer: Sendable, Hashable {
    public var nodeID: NodeID
    /// Every address it is resolved at (one per interface and family), in dialling order
    /// (``AddressPreference``), at most ``maxAddresses``; a link-local IPv6 one carries its
    /// interface (`fe80::1%eth0`).
    public var hosts: [String]
    public var port: Int

    public init(nodeID: NodeID, hosts: [String], port: Int) {
        self.nodeID = nodeID
        self.hosts = Array(AddressPreference.ordered(hosts).prefix(Self.maxAddresses))
        self.port = port
    }

    /// The address dialled first.
    public var host: String { hosts.first ?? "" }

    /// The most addresses kept for one peer (for one host name on one interface and family, and
    /// in all): adverts and records are anyone's to publish on a LAN, and each address is a dial
    /// attempt 250 ms after the one before.
    public static let maxAddresses = 16
}

/// What a discovery mechanism reports to the node.
public enum DiscoveryEvent: Sendable, Equatable {
    /// A peer of our cluster (not ourselves) announced itself, or its addresses changed (it
    /// appeared or went on one interface or family, or moved).
    case found(DiscoveredPeer)
    /// A peer's announcement went away (it may just be restarting).
    case lost(NodeID)
    /// The mechanism works (the Avahi daemon is reachable, our service is published).
    case available
    /// The mechanism does not work right now, and why; it keeps trying.
    case unavailable(String)
}

/// A way for nodes to find each other. The Avahi implementation speaks mDNS/DNS-SD; tests can
/// substitute their own inside one module's unit tests.
public protocol Discovery: Sendable {
    /// Starts advertising and browsing; events arrive until ``stop()``.
    func start(_ advertisement: Advertisement) -> AsyncStream<DiscoveryEvent>
    func stop()
}
