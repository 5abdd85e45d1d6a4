public import LansyncCore

/// How a node found a peer. Stored in table `peer` and shown by `status` as its raw value.
public enum PeerSource: String, Sendable, CaseIterable {
    /// Configured with `--peer HOST:PORT` (or dialled by `lansync sync`).
    case configured = "static"
    /// Advertised on the LAN over mDNS.
    case mdns
    /// The relay configured with `--relay`.
    case relay
    /// It dialled this node.
    case inbound
    /// Another member passed on where it last reached it (``Hello`` addresses, protocol 1.8).
    case gossip

    /// Of two ways a peer is known, the one it is shown by: what the user named (the relay, a
    /// `--peer`), over what mDNS saw, over what a member passed on, over a peer that dialled in.
    /// A peer given with `--peer` stays `static` whichever dial loop reached it last.
    public func strongest(_ other: PeerSource) -> PeerSource { other.rank > rank ? other : self }

    private var rank: Int {
        switch self {
        case .relay: 4
        case .configured: 3
        case .mdns: 2
        case .gossip: 1
        case .inbound: 0
        }
    }
}

/// What a node remembers of one peer between runs (table `peer`).
public struct PeerRecord: Sendable, Equatable {
    public var nodeID: NodeID
    public var name: String?
    public var address: String?
    public var source: PeerSource
    /// Unix milliseconds of the last time both sides were up to date.
    public var lastSync: UInt64?
    public var lastError: String?
    /// What this node last knew the peer holds.
    public var versionVector: VersionVector

    public init(
        nodeID: NodeID,
        name: String? = nil,
        address: String? = nil,
        source: PeerSource,
        lastSync: UInt64? = nil,
        lastError: String? = nil,
        versionVector: VersionVector = VersionVector()
    ) {
        self.nodeID = nodeID
        self.name = name
        self.address = address
        self.source = source
        self.lastSync = lastSync
        self.lastError = lastError
        self.versionVector = versionVector
    }
}

/// One of this node's own changes still live in the replica, for `status`.
public struct LocalChange: Sendable, Equatable {
    public let item: ItemID
    public let field: FieldName
    public let counter: UInt64
    /// The writer id it was issued under (one of this replica's, see ``writers()``).
    public let writer: NodeID
    /// True if the holder of the version vector given to ``ReplicaStore/localChanges(limit:seenBy:)`` has it.
    public let seen: Bool

    public init(item: ItemID, field: FieldName, counter: UInt64, writer: NodeID, seen: Bool) {
        self.item = item
        self.field = field
        self.counter = counter
        self.writer = writer
        self.seen = seen
    }
}

/// A change the relay refused.
public struct Rejection: Sendable, Equatable {
    public let item: ItemID
    public let field: FieldName
    public let counter: UInt64
    public let reason: String

    public init(item: ItemID, field: FieldName, counter: UInt64, reason: String) {
        self.item = item
        self.field = field
        self.counter = counter
        self.reason = reason
    }
}

extension Rejection {
    /// A row of table `rejection`, as both backends store it.
    package init(item: String, field: String, counter: Int64, reason: String) {
        self.init(
            item: ItemID(unchecked: item),
            field: FieldName(unchecked: field),
            counter: UInt64(clamping: counter),
            reason: reason
        )
    }

    /// The replica's own refused changes (under any of its writers), newest first: SQL both
    /// backends' dialects read alike, so it is written once.
    package static let ownQuery = """
        SELECT item_id, field, counter, reason FROM rejection WHERE node_id IN (SELECT writer_id FROM writer)
        ORDER BY counter DESC
        """

    /// The writes refused for their member (revoked, a reader, or unsigned where signatures are
    /// required), newest first; the backend appends its `LIMIT`.
    package static let refusedWritesQuery = """
        SELECT item_id, field, counter, reason FROM rejection
        WHERE (reason LIKE 'written by revoked node %' OR reason LIKE 'written by reader node %' OR reason LIKE '\(SignatureRequirement.reasonStart) %')
        ORDER BY counter DESC
        """
}
