public import LansyncCore

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
}

/// An item as read for display: shown values as JSON text, straight from the store.
public struct StoredItem: Sendable, Equatable {
    public let id: String
    public let type: String
    public let deleted: Bool
    /// User fields by name, in byte order, each with its shown value as JSON.
    public let fields: [(name: String, json: String)]
    public let conflicts: [String]

    public static func == (lhs: StoredItem, rhs: StoredItem) -> Bool {
        lhs.id == rhs.id && lhs.type == rhs.type && lhs.deleted == rhs.deleted && lhs.conflicts == rhs.conflicts
            && lhs.fields.map(\.name) == rhs.fields.map(\.name) && lhs.fields.map(\.json) == rhs.fields.map(\.json)
    }
}

/// This replica's identity and settings.
public struct ReplicaInfo: Sendable, Equatable {
    public let nodeID: NodeID
    public let clusterID: NodeID
    public let nodeName: String
    public let fingerprint: String
    public let historyLimit: Int
}
