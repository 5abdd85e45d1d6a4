public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Settings and marks kept in `meta`, as the SQLite store keeps them: the collection windows, the
// cluster's relay, when the replica last rejoined; and what arrived first, for the relay's
// first-seen policy.
extension PostgresReplica {
    public func collectionSettings() throws(StoreError) -> CollectionSettings {
        try guarded { try database.statements { db in try Self.collectionSettings(db) } }
    }

    static func collectionSettings(_ db: BlockingPostgres.Statements) throws -> CollectionSettings {
        var values: [String: UInt64] = [:]
        for row in try db.run("SELECT key, value FROM meta WHERE key IN ('trash_window', 'away_after')") {
            let (key, value) = try row.decode((String, String).self)
            values[key] = UInt64(value)
        }
        let standard = CollectionSettings.standard
        return CollectionSettings(
            trashWindow: values["trash_window"] ?? standard.trashWindow,
            awayAfter: values["away_after"] ?? standard.awayAfter
        )
    }

    public func setCollectionSettings(_ settings: CollectionSettings) throws(StoreError) {
        try guarded {
            try database.transaction { db in
                for (key, value) in [("trash_window", settings.trashWindow), ("away_after", settings.awayAfter)] {
                    try Self.setMeta(key, String(value), db)
                }
            }
        }
    }

    /// The member an operator named for this stale replica to rejoin from (meta `rejoin_from`;
    /// ``LansyncStore/ReplicaStore/acceptRejoin(from:now:)``).
    public func acceptedRejoinSource() throws(StoreError) -> NodeID? {
        try guarded {
            try database.statements { db in
                try db.value("SELECT value FROM meta WHERE key = 'rejoin_from'", as: String.self).flatMap(
                    NodeID.init(text:)
                )
            }
        }
    }

    /// The cluster's relay as this replica learnt it, nil if it never met one.
    public func relayID() throws(StoreError) -> NodeID? {
        try guarded {
            try database.statements { db in
                try db.value("SELECT value FROM meta WHERE key = 'relay_id'", as: String.self).flatMap(
                    NodeID.init(text:)
                )
            }
        }
    }

    /// Records which node is the cluster's relay.
    public func noteRelay(_ relay: NodeID) throws(StoreError) {
        try guarded { try database.statements { db in try Self.setMeta("relay_id", relay.text, db) } }
    }

    /// When the replica last rejoined from a snapshot (0: never).
    public func rejoinedAt() throws(StoreError) -> UInt64 {
        try guarded { try database.statements { db in try Self.rejoinedAt(db) } }
    }

    /// Of the given versions of a field, the one this replica received first (by arrival order in
    /// `history`, whose numbers follow commit order under the write lock); nil if none is
    /// recorded.
    public func firstSeen(_ dots: [Dot], item: ItemID, field: FieldName) throws(StoreError) -> Dot? {
        guard !dots.isEmpty else { return nil }
        return try guarded {
            try database.statements { db in
                let rows = try db.run(
                    """
                    SELECT n.node_id, h.counter FROM history h JOIN field f ON f.id = h.field JOIN item i ON i.id = f.item
                    JOIN node n ON n.id = h.node
                    JOIN unnest(\(dots.map(\.node.text))::text[], \(dots.map { Int64(clamping: $0.counter) })::bigint[])
                        AS d (node_id, counter) ON d.node_id = n.node_id AND d.counter = h.counter
                    WHERE i.item_id = \(item.rawValue) AND f.name = \(field.rawValue)
                    ORDER BY h.seq LIMIT 1
                    """
                )
                guard let row = rows.first else { return nil }
                let (node, counter) = try row.decode((String, Int64).self)
                return NodeID(text: node).map { Dot(node: $0, counter: UInt64(counter)) }
            }
        }
    }

    /// Raises a number kept in table meta to `value` (never lowers it).
    static func raiseMeta(_ key: String, to value: Int64, _ db: BlockingPostgres.Statements) throws {
        try db.run(
            """
            INSERT INTO meta (key, value) VALUES (\(key), \(String(value)))
            ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value::bigint, excluded.value::bigint)::text
            """
        )
    }

    static func setMeta(_ key: String, _ value: String, _ db: BlockingPostgres.Statements) throws {
        try db.run(
            "INSERT INTO meta (key, value) VALUES (\(key), \(value)) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
    }
}
