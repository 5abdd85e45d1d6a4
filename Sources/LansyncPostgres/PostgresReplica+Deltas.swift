public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Deltas: the version index, replaced fields and field states a DeltaStream reads, each batch
// in one snapshot.
extension PostgresReplica: DeltaReading {
    /// How many field states a replica holding `remote` lacks, counted up to `cap`.
    public func lacking(_ remote: VersionVector, cap: Int) throws(StoreError) -> Int {
        try guarded {
            try database.transaction(snapshot: true) { db in
                try PostgresDeltaReads(db: db).lacking(local: try Self.versionVector(db), remote: remote, cap: cap)
            }
        }
    }

    public func readDelta<T>(_ body: (any DeltaReads) throws -> T) throws(StoreError) -> T {
        try guarded { try database.transaction(snapshot: true) { db in try body(PostgresDeltaReads(db: db)) } }
    }

    public func streamStart(
        unclaimed: (VersionVector) -> Bool
    ) throws(StoreError) -> (stamp: UInt64, versionVector: VersionVector, unclaimed: [NodeID]) {
        try guarded {
            try database.transaction(snapshot: true) { db in
                let stamp =
                    try db.value("SELECT value FROM meta WHERE key = 'changes'", as: String.self)
                    .flatMap(UInt64.init) ?? 0
                let vector = try Self.versionVector(db)
                guard unclaimed(vector) else { return (stamp, vector, []) }
                // One index probe per node: a version beyond the node's counter is a stream's
                // not yet complete.
                let nodes = try db.run(
                    """
                    SELECT n.node_id FROM node n
                    WHERE EXISTS (SELECT 1 FROM version v WHERE v.node = n.id AND v.counter > n.counter)
                    """
                ).compactMap { NodeID(text: try $0.decode(String.self)) }
                return (stamp, vector, nodes)
            }
        }
    }

    public func indexedNodes(of key: FieldKey) throws(StoreError) -> Set<NodeID> {
        try guarded {
            try database.statements { db in
                Set(
                    try db.run(
                        """
                        SELECT DISTINCT n.node_id FROM version v JOIN node n ON n.id = v.node
                        JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                        WHERE i.item_id = \(key.item.rawValue) AND f.name = \(key.field.rawValue)
                        """
                    ).compactMap { NodeID(text: try $0.decode(String.self)) }
                )
            }
        }
    }

    /// Records the damage in `meta` (best effort: the stream already leaves the state out). Not
    /// yet read: a damaged PostgreSQL replica does not refuse writes as the SQLite store does.
    public func noteBroken(_ broken: [FieldKey]) {
        guard let first = broken.first else { return }
        let reason = "the state of \(first.item).\(first.field) does not decode"
        _ = try? database.statements { db in
            try db.run(
                "INSERT INTO meta (key, value) VALUES ('damaged', \(reason)) ON CONFLICT (key) DO NOTHING"
            )
        }
    }
}

/// A delta batch's reads in one snapshot of a PostgreSQL replica.
///
/// Every statement is a round trip, so what the walk will ask of several writers is read in one
/// (``prefetchVersionRows(_:)``), and what a receiver lacks is counted in one.
final class PostgresDeltaReads: DeltaReads {
    let db: BlockingPostgres.Statements
    /// The rows read ahead, per node and the counter they start after: at most
    /// ``prefetchedRows`` each, and whether that was all there were.
    private var ahead: [NodeID: (after: UInt64, rows: [DeltaPlanner.IndexRow], complete: Bool)] = [:]

    /// Rows read ahead per writer: a live delta lacks one or two of each; a writer with more is
    /// asked again for as many as the walk wants.
    static let prefetchedRows = 8

    init(db: BlockingPostgres.Statements) { self.db = db }

    func prefetchVersionRows(_ upcoming: [(node: NodeID, after: UInt64)]) throws {
        guard upcoming.count > 1 else { return }
        let rows = try db.run(
            """
            SELECT w.n, r.counter, r.item_id, r.name
            FROM unnest(\(upcoming.map(\.node.text))::text[], \(upcoming.map { Int64(clamping: $0.after) })::bigint[])
                WITH ORDINALITY AS w (node_id, after, n)
            CROSS JOIN LATERAL (
                SELECT v.counter, i.item_id, f.name FROM version v
                JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                WHERE v.node = (SELECT id FROM node WHERE node_id = w.node_id) AND v.counter > w.after
                ORDER BY v.counter LIMIT \(Self.prefetchedRows)
            ) r
            ORDER BY w.n, r.counter
            """
        )
        var found = [[DeltaPlanner.IndexRow]](repeating: [], count: upcoming.count)
        for row in rows {
            let (n, counter, item, name) = try row.decode((Int64, Int64, String, String).self)
            found[Int(n) - 1].append(
                (UInt64(counter), FieldKey(item: ItemID(unchecked: item), field: FieldName(unchecked: name)))
            )
        }
        for (i, ask) in upcoming.enumerated() {
            ahead[ask.node] = (ask.after, found[i], found[i].count < Self.prefetchedRows)
        }
    }

    func versionRows(node: NodeID, after counter: UInt64, limit: Int) throws -> [DeltaPlanner.IndexRow] {
        if let read = ahead.removeValue(forKey: node), read.after == counter,
            read.complete || limit <= read.rows.count
        {
            return Array(read.rows.prefix(limit))
        }
        return try db.run(
            """
            SELECT v.counter, i.item_id, f.name FROM version v
            JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
            WHERE v.node = (SELECT id FROM node WHERE node_id = \(node.text)) AND v.counter > \(bigint: counter)
            ORDER BY v.counter LIMIT \(limit)
            """
        ).map { row in
            let (counter, item, name) = try row.decode((Int64, String, String).self)
            return (UInt64(counter), FieldKey(item: ItemID(unchecked: item), field: FieldName(unchecked: name)))
        }
    }

    func signedRuns(
        of node: NodeID,
        overlapping counters: ClosedRange<UInt64>
    ) throws -> [(run: SignedRun, leaves: Int)] {
        try db.run(
            """
            SELECT first, last, key, signature, leaves FROM signed_run
            WHERE node_id = \(node.text) AND first <= \(bigint: counters.upperBound) AND last >= \(bigint: counters.lowerBound)
                AND first >= (SELECT coalesce(max(first), 0) FROM signed_run
                    WHERE node_id = \(node.text) AND first <= \(bigint: counters.lowerBound))
            ORDER BY first
            """
        ).map { row in
            let (first, last, key, signature, leaves) = try row.decode(
                (Int64, Int64, ByteBuffer, ByteBuffer, Int32).self
            )
            let run = SignedRun(
                writer: node,
                first: UInt64(clamping: first),
                last: UInt64(clamping: last),
                key: Array(key.readableBytesView),
                signature: Array(signature.readableBytesView)
            )
            return (run, Int(leaves))
        }
    }

    func goneLeaves(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [RunLeaf] {
        try db.run(
            """
            SELECT counter, field, digest FROM run_leaf WHERE node_id = \(node.text)
                AND counter BETWEEN \(bigint: counters.lowerBound) AND \(bigint: counters.upperBound)
            ORDER BY counter
            """
        ).compactMap { row in
            let (counter, field, digest) = try row.decode((Int64, String, ByteBuffer).self)
            return RunLeaf(
                counter: UInt64(clamping: counter),
                field: FieldName(unchecked: field),
                digestBytes: digest.readableBytesView
            )
        }
    }

    func memberCertificate(of key: [UInt8]) throws -> [UInt8]? {
        try db.run("SELECT der FROM member_certificate WHERE key = \(ByteBuffer(bytes: key))").first.map {
            Array(try $0.decode(ByteBuffer.self).readableBytesView)
        }
    }

    func indexedVersions(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [DeltaPlanner.IndexRow] {
        try db.run(
            """
            SELECT v.counter, i.item_id, f.name FROM version v
            JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
            WHERE v.node = (SELECT id FROM node WHERE node_id = \(node.text))
                AND v.counter BETWEEN \(bigint: counters.lowerBound) AND \(bigint: counters.upperBound)
            ORDER BY v.counter
            """
        ).map { row in
            let (counter, item, name) = try row.decode((Int64, String, String).self)
            return (UInt64(counter), FieldKey(item: ItemID(unchecked: item), field: FieldName(unchecked: name)))
        }
    }

    func superseded(
        after cursor: SupersededCursor,
        limit: Int
    ) throws -> (keys: [FieldKey], next: SupersededCursor, complete: Bool) {
        let rows = try db.run(
            """
            SELECT f.superseded_at, f.id, i.item_id, f.name FROM field f JOIN item i ON i.id = f.item
            WHERE f.superseded_at > 0 AND (f.superseded_at, f.id) > (\(bigint: cursor.stamp), \(cursor.field))
            ORDER BY f.superseded_at, f.id LIMIT \(limit)
            """
        )
        var next = cursor
        let keys = try rows.map { row -> FieldKey in
            let (stamp, field, item, name) = try row.decode((Int64, Int64, String, String).self)
            next = SupersededCursor(stamp: UInt64(stamp), field: field)
            return FieldKey(item: ItemID(unchecked: item), field: FieldName(unchecked: name))
        }
        return (keys, next, rows.count < limit)
    }

    func sizedFieldUpdates(_ keys: [FieldKey]) throws -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        guard !keys.isEmpty else { return ([], 0, []) }
        // One statement for the batch, in the keys' order.
        let rows = try db.run(
            """
            SELECT k.n, f.state FROM unnest(\(keys.map(\.item.rawValue))::text[], \(keys.map(\.field.rawValue))::text[])
                WITH ORDINALITY AS k (item_id, name, n)
            JOIN item i ON i.item_id = k.item_id JOIN field f ON f.item = i.id AND f.name = k.name
            ORDER BY k.n
            """
        )
        var (updates, bytes, broken) = ([FieldUpdate](), 0, [FieldKey]())
        for row in rows {
            let (n, state) = try row.decode((Int64, ByteBuffer).self)
            let key = keys[Int(n) - 1]
            bytes += state.readableBytes + key.item.rawValue.utf8.count + key.field.rawValue.utf8.count
            guard let decoded = try? FieldState(decoding: Array(state.readableBytesView)) else {
                broken.append(key)
                continue
            }
            updates.append(FieldUpdate(key: key, state: decoded))
        }
        return (updates, bytes, broken)
    }

    func lacking(local: VersionVector, remote: VersionVector, cap: Int) throws -> Int {
        let behind = local.counters.filter { $0.value > remote[$0.key] }
        guard !behind.isEmpty else { return 0 }
        // Every writer's rows in one statement, counted up to the cap as a whole.
        let total =
            try db.value(
                """
                SELECT count(*) FROM (
                    SELECT 1
                    FROM unnest(\(behind.map(\.key.text))::text[], \(behind.map { Int64(clamping: remote[$0.key]) })::bigint[])
                        AS w (node_id, after)
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM version WHERE node = (SELECT id FROM node WHERE node_id = w.node_id)
                            AND counter > w.after
                    ) v
                    LIMIT \(cap)
                ) AS lacking
                """,
                as: Int64.self
            ) ?? 0
        return min(Int(total), cap)
    }
}
