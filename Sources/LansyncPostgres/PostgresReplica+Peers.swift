public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Peers, the names nodes gave themselves, the cluster's statements, and the refusals of this
// replica's own writes: bookkeeping, as the SQLite store keeps it.
extension PostgresReplica {
    public func savePeer(_ record: PeerRecord) throws(StoreError) {
        try guarded { try database.statements { db in try Self.savePeer(record, db) } }
    }

    static func savePeer(_ record: PeerRecord, _ db: BlockingPostgres.Statements) throws {
        var w = ByteWriter()
        w.versionVector(record.versionVector)
        try db.run(
            """
            INSERT INTO peer (node_id, name, address, source, last_sync, last_error, version_vector)
            VALUES (\(record.nodeID.text), \(record.name), \(record.address), \(record.source.rawValue),
                \(record.lastSync.map { Int64(clamping: $0) }), \(record.lastError), \(ByteBuffer(bytes: w.bytes)))
            ON CONFLICT (node_id) DO UPDATE SET name = excluded.name, address = excluded.address,
                source = excluded.source, last_sync = excluded.last_sync, last_error = excluded.last_error,
                version_vector = excluded.version_vector
            """
        )
    }

    /// What a running node learnt of its peers since its last save, in one transaction: their
    /// records, the member reports their sessions amount to, and the names their hellos gave.
    /// Under the write lock: the names add rows to `node`, which merges add to as well.
    public func savePeers(
        _ records: [PeerRecord],
        reports: [MemberReport],
        names: [(name: String, ids: Set<NodeID>)]
    ) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .peer)
                for record in records { try Self.savePeer(record, db) }
                try Self.recordReports(reports, gossiped: false, db)
                for (name, ids) in names {
                    for id in ids.sorted() {
                        try db.run(
                            """
                            INSERT INTO node (node_id, name) VALUES (\(id.text), \(name))
                            ON CONFLICT (node_id) DO UPDATE SET name = excluded.name
                            """
                        )
                    }
                }
            }
        }
    }

    /// This replica's most recent live changes under any of its writers (newest writer first,
    /// then newest change; the fields of one change by item and name), and how many of its live changes a holder of `seen` lacks, and has.
    public func localChanges(
        limit: Int,
        seenBy seen: VersionVector
    ) throws(StoreError) -> (recent: [LocalChange], above: Int, atOrBelow: Int) {
        try guarded {
            try database.transaction(snapshot: true) { db in
                var recent: [LocalChange] = []
                var above = 0
                var below = 0
                for writer in try Self.writerIDs(db).reversed() {
                    guard let row = try db.value("SELECT id FROM node WHERE node_id = \(writer.text)", as: Int64.self)
                    else { continue }
                    let split = Int64(clamping: seen[writer])
                    if recent.count < limit {
                        recent += try db.run(
                            """
                            SELECT v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field
                            JOIN item i ON i.id = f.item WHERE v.node = \(row) ORDER BY v.counter DESC, i.item_id, f.name
                            LIMIT \(limit - recent.count)
                            """
                        ).map { row in
                            let (counter, item, field) = try row.decode((Int64, String, String).self)
                            return LocalChange(
                                item: ItemID(unchecked: item),
                                field: FieldName(unchecked: field),
                                counter: UInt64(counter),
                                writer: writer,
                                seen: UInt64(counter) <= seen[writer]
                            )
                        }
                    }
                    let (over, under) =
                        try db.run(
                            """
                            SELECT count(*) FILTER (WHERE counter > \(split)), count(*) FILTER (WHERE counter <= \(split))
                            FROM version WHERE node = \(row)
                            """
                        ).first?.decode((Int, Int).self) ?? (0, 0)
                    above += over
                    below += under
                }
                return (recent, above, below)
            }
        }
    }

    /// Every peer remembered, by node id.
    public func peers() throws(StoreError) -> [PeerRecord] {
        try guarded {
            try database.statements { db in
                try db.run(
                    """
                    SELECT node_id, name, address, source, last_sync, last_error, version_vector FROM peer
                    ORDER BY node_id
                    """
                ).compactMap { row in
                    let (id, name, address, source, lastSync, lastError, vector) = try row.decode(
                        (String, String?, String?, String, Int64?, String?, ByteBuffer?).self
                    )
                    guard let nodeID = NodeID(text: id) else { return nil }
                    var reader = ByteReader(vector.map { Array($0.readableBytesView) } ?? [])
                    return PeerRecord(
                        nodeID: nodeID,
                        name: name,
                        address: address,
                        source: PeerSource(rawValue: source) ?? .inbound,
                        lastSync: lastSync.map { UInt64(max(0, $0)) },
                        lastError: lastError,
                        versionVector: vector == nil
                            ? VersionVector() : (try? reader.versionVector()) ?? VersionVector()
                    )
                }
            }
        }
    }

    /// The names nodes gave themselves (their hellos).
    public func nodeNames() throws(StoreError) -> [NodeID: String] {
        try guarded {
            try database.statements { db in
                var names: [NodeID: String] = [:]
                for row in try db.run("SELECT node_id, name FROM node WHERE name IS NOT NULL") {
                    let (id, name) = try row.decode((String, String).self)
                    if let id = NodeID(text: id) { names[id] = name }
                }
                return names
            }
        }
    }

    /// Keeps the cluster statements whose keys are not held yet (each already checked against
    /// the authority's signature by the caller); how many were new.
    @discardableResult
    public func addStatements(_ statements: [(key: [UInt8], record: [UInt8])]) throws(StoreError) -> Int {
        guard !statements.isEmpty else { return 0 }
        return try guarded {
            try database.transaction { db in
                let added = try statements.reduce(0) { added, statement in
                    let inserted = try db.run(
                        """
                        INSERT INTO statement (key, record) VALUES (\(ByteBuffer(bytes: statement.key)), \(ByteBuffer(bytes: statement.record)))
                        ON CONFLICT DO NOTHING RETURNING 1
                        """
                    )
                    return added + inserted.count
                }
                // The other relay processes on the replica take it in too (a revocation they must
                // enforce at once), as the commit's notice tells them.
                if added > 0 {
                    try db.run(
                        "SELECT pg_notify(current_schema(), current_setting('lansync.tag', true) || ':statements')"
                    )
                }
                return added
            }
        }
    }

    /// Every cluster statement held, in its binary form, by key.
    public func statementRecords() throws(StoreError) -> [[UInt8]] {
        try guarded {
            try database.statements { db in
                try db.run("SELECT record FROM statement ORDER BY key").map {
                    Array(try $0.decode(ByteBuffer.self).readableBytesView)
                }
            }
        }
    }

    /// The changes this replica wrote (under any of its writers) that the relay refused, newest
    /// first.
    public func ownRejections() throws(StoreError) -> [Rejection] {
        try guarded {
            try database.statements { db in
                try db.run("\(unescaped: Rejection.ownQuery)").map { row in
                    let (item, field, counter, reason) = try row.decode((String, String, Int64, String).self)
                    return Rejection(item: item, field: field, counter: counter, reason: reason)
                }
            }
        }
    }

    /// A number that grows with every transaction that changed a field (any process's).
    public func changeStamp() throws(StoreError) -> UInt64 {
        try guarded {
            try database.statements { db in
                try db.value("SELECT value FROM meta WHERE key = 'changes'", as: String.self).flatMap(UInt64.init) ?? 0
            }
        }
    }
}
