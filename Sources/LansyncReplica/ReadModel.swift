public import LansyncCore
import LansyncJSON

/// One version of one field, as `lansync history` shows it.
public struct HistoryEntry: Sendable, Equatable {
    public let field: FieldName
    public let dot: Dot
    /// The writer's name, when this replica knows it.
    public let writerName: String?
    public let timestamp: HLCTimestamp
    public let write: FieldVersion.Write
    /// True if this version is one the field shows or keeps as a sibling right now.
    public let isLive: Bool
    /// True if this replica holds the signed run of the version's dot: its writer's member
    /// signed it, and this replica checked the signature when it came (or made it). False for a
    /// write made before protocol 1.14, or passed on without its run: unverified.
    public let isSigned: Bool

    package init(
        field: FieldName,
        dot: Dot,
        writerName: String?,
        timestamp: HLCTimestamp,
        write: FieldVersion.Write,
        isLive: Bool,
        isSigned: Bool = false
    ) {
        self.field = field
        self.dot = dot
        self.writerName = writerName
        self.timestamp = timestamp
        self.write = write
        self.isLive = isLive
        self.isSigned = isSigned
    }

    /// The entry, marked signed or not.
    package func signed(_ isSigned: Bool) -> HistoryEntry {
        HistoryEntry(
            field: field,
            dot: dot,
            writerName: writerName,
            timestamp: timestamp,
            write: write,
            isLive: isLive,
            isSigned: isSigned
        )
    }

    /// A version of a field: what names an entry.
    package struct Key: Hashable {
        package let field: FieldName
        package let dot: Dot

        package init(field: FieldName, dot: Dot) {
            self.field = field
            self.dot = dot
        }
    }
}

/// An item as read for display: its id, type, shown values and open conflicts, straight from
/// the store (``ReplicaStore/storedItem(_:withLocalEdits:)``).
public struct StoredItem: Sendable, Equatable {
    public let id: ItemID
    public let type: String
    public let deleted: Bool
    /// User fields by name, in byte order, each with its shown value.
    public let fields: [(name: FieldName, value: Value)]
    /// The fields with an open conflict (`_type` among them when the item's type is in conflict).
    public let conflicts: [FieldName]
    /// The dots of this replica's latest live edits of the item, one per writer of this
    /// replica's (what its sync state is judged by; nil when none is live), when the read asked
    /// for them (``ReplicaStore/items(_:withLocalEdits:)``); nil otherwise. Not compared by `==`.
    public var localEdit: VersionVector?

    public init(
        id: ItemID,
        type: String,
        deleted: Bool,
        fields: [(name: FieldName, value: Value)],
        conflicts: [FieldName]
    ) {
        self.id = id
        self.type = type
        self.deleted = deleted
        self.fields = fields
        self.conflicts = conflicts
    }

    /// The item as a merge state shows it: user fields with a shown value and the fields in
    /// conflict (the tombstone never), each in byte order of their names, as a store lists them.
    public init(_ state: ItemState) {
        func byteOrder(_ a: FieldName, _ b: FieldName) -> Bool {
            a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8)
        }
        let shown = state.fields.compactMap { name, field in
            name.isReserved ? nil : field.shownValue.map { (name: name, value: $0) }
        }
        self.init(
            id: state.id,
            type: state.type,
            deleted: state.isDeleted,
            fields: shown.sorted { byteOrder($0.name, $1.name) },
            conflicts: state.fields.filter { $0.key != .deleted && $0.value.hasConflict }.map(\.key).sorted(
                by: byteOrder
            )
        )
    }

    /// The shown value of the field `name`, nil if the item has no such field.
    public func value(of name: FieldName) -> Value? { fields.first { $0.name == name }?.value }

    public static func == (lhs: StoredItem, rhs: StoredItem) -> Bool {
        lhs.id == rhs.id && lhs.type == rhs.type && lhs.deleted == rhs.deleted && lhs.conflicts == rhs.conflicts
            && lhs.fields.map(\.name) == rhs.fields.map(\.name) && lhs.fields.map(\.value) == rhs.fields.map(\.value)
    }
}

/// This replica's identity and settings.
public struct ReplicaInfo: Sendable, Equatable {
    public let nodeID: NodeID
    public let clusterID: NodeID
    public let nodeName: String
    public let fingerprint: String
    public let historyLimit: Int
    /// The id this replica's next local write will be issued under (unless it must start a new
    /// one first, see ``WriterContinuity``).
    public let writerID: NodeID

    public init(
        nodeID: NodeID,
        clusterID: NodeID,
        nodeName: String,
        fingerprint: String,
        historyLimit: Int,
        writerID: NodeID
    ) {
        self.nodeID = nodeID
        self.clusterID = clusterID
        self.nodeName = nodeName
        self.fingerprint = fingerprint
        self.historyLimit = historyLimit
        self.writerID = writerID
    }
}

/// One of this replica's write identities (table `writer`).
public struct WriterRecord: Sendable, Equatable {
    public let id: NodeID
    /// Unix milliseconds when it started (0 for the first, made at `init`).
    public let started: UInt64
    public let reason: Reason

    public init(id: NodeID, started: UInt64, reason: Reason) {
        self.id = id
        self.started = started
        self.reason = reason
    }

    /// Why a writer started.
    public enum Reason: String, Sendable {
        /// The replica's first writer, its node id.
        case `init`
        /// No marker of this boot proved the previous writer's continuity (a reboot, an upgrade,
        /// another machine).
        case unproven
        /// The replica held less than its writer's marker: it was restored from an older copy.
        case restored
        /// A peer held more of the previous writer than the replica: it was rolled back.
        case witness
        /// The data directory was copied or moved and took a new node identity.
        case copied
        /// `lansync repair` rebuilt the replica.
        case repair
        /// The previous writer id was random, taken before writer ids named their node: the new
        /// one names it, so that a revocation of this node can cut its writes
        /// (``RevokedWriters``).
        case named
        /// The replica came back after being away and rejoined from a snapshot: its writes no
        /// one else held are re-issued under the new writer.
        case rejoin
        /// The member was a reader and may write again (Docs/SECURITY.md, "Roles"): the reader's
        /// cut refuses the previous writer's later writes for good.
        case role
    }
}
