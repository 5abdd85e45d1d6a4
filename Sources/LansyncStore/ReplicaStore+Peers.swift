import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

extension ReplicaStore {
    public func savePeer(_ record: PeerRecord) throws(StoreError) {
        try guarded { try database.write { db in try Self.savePeer(record, db: db) } }
    }

    /// What a running node learnt of its peers since its last save, in one transaction: their
    /// records, the member reports their sessions amount to, and the names their hellos gave.
    ///
    /// Committed without waiting for the disk (``writeBookkeeping(_:)``): a node saves this after
    /// nearly every change a peer acknowledges, once per peer, and each of those commits was an
    /// fsync of its own (issue 33: four to nine fsyncs per edit on every node of a large cluster).
    public func savePeers(
        _ records: [PeerRecord],
        reports: [MemberReport],
        names: [(name: String, ids: Set<NodeID>)]
    ) throws(StoreError) {
        let own = reports.isEmpty ? nil : try info().nodeID
        try writeBookkeeping { db in
            for record in records { try Self.savePeer(record, db: db) }
            if let own { try Self.recordReports(reports, gossiped: false, own: own, db: db) }
            for (name, ids) in names {
                for id in ids.sorted() {
                    try db.cachedStatement(
                        sql:
                            "INSERT INTO node(node_id, name) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET name = excluded.name"
                    ).execute(arguments: [id.text, name])
                }
            }
        }
    }

    private static func savePeer(_ record: PeerRecord, db: Database) throws {
        var w = ByteWriter()
        w.versionVector(record.versionVector)
        try db.cachedStatement(
            sql: """
                INSERT INTO peer(node_id, name, address, source, last_sync, last_error, version_vector)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(node_id) DO UPDATE SET name = excluded.name, address = excluded.address,
                    source = excluded.source, last_sync = excluded.last_sync, last_error = excluded.last_error,
                    version_vector = excluded.version_vector
                """
        ).execute(arguments: [
            record.nodeID.text, record.name, record.address, record.source.rawValue,
            record.lastSync.map { Int64(clamping: $0) }, record.lastError, Data(w.bytes),
        ])
    }

    public func peers() throws(StoreError) -> [PeerRecord] {
        try guarded {
            try database.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT node_id, name, address, source, last_sync, last_error, version_vector FROM peer ORDER BY node_id"
                ).compactMap { row in
                    guard let id = NodeID(text: (try row.decode(atIndex: 0))) else { return nil }
                    var vv = VersionVector()
                    if let blob = (try row.decode(atIndex: 6) as Data?) {
                        var r = ByteReader(Array(blob))
                        vv = (try? r.versionVector()) ?? VersionVector()
                    }
                    return PeerRecord(
                        nodeID: id,
                        name: (try row.decode(atIndex: 1)),
                        address: (try row.decode(atIndex: 2)),
                        source: PeerSource(rawValue: try row.decode(atIndex: 3)) ?? .inbound,
                        lastSync: ((try row.decode(atIndex: 4) as Int64?)).map { UInt64(max(0, $0)) },
                        lastError: (try row.decode(atIndex: 5)),
                        versionVector: vv
                    )
                }
            }
        }
    }

    /// How many field states this replica holds with a version the holder of `remote` has not
    /// seen: what that peer still lacks. Counted through the version index, so proportional to
    /// the answer (and stopping at `cap`).
    public func lacking(_ remote: VersionVector, cap: Int = StoreDefaults.lackingCap) throws(StoreError) -> Int {
        let local = try versionVector()
        return try guarded { try database.read { db in try Self.lacking(db, local: local, remote: remote, cap: cap) } }
    }

    /// The same for a known `local` vector, inside a read: one bounded index range per node
    /// `local` is ahead on.
    static func lacking(_ db: Database, local: VersionVector, remote: VersionVector, cap: Int) throws -> Int {
        var total = 0
        let count = try db.cachedStatement(
            sql: "SELECT count(*) FROM (SELECT 1 FROM version WHERE node = ? AND counter > ? LIMIT ?)"
        )
        for (node, counter) in local.counters where counter > remote[node] && total < cap {
            guard let row = try nodeRow(of: node, db: db) else { continue }
            total +=
                try Int.fetchOne(
                    count,
                    arguments: [row, Int64(clamping: remote[node]), cap - total]
                ) ?? 0
        }
        return total
    }

    /// Counts for status: items (live), deleted items, fields with open conflicts.
    public func counts() throws(StoreError) -> (items: Int, deleted: Int, conflicts: Int) {
        try guarded {
            try database.read { db in
                let items = try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE deleted = 0") ?? 0
                let deleted = try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE deleted = 1") ?? 0
                let conflicts = try Int.fetchOne(db, sql: "SELECT count(*) FROM field WHERE conflict = 1") ?? 0
                return (items, deleted, conflicts)
            }
        }
    }
}

extension ReplicaStore {
    /// Of the given versions of a field, the one this replica received first (by arrival order in
    /// `history`); nil if none is recorded.
    public func firstSeen(_ dots: [Dot], item: ItemID, field: FieldName) throws(StoreError) -> Dot? {
        try guarded {
            try database.read { db in
                var best: (seq: Int64, dot: Dot)?
                for dot in dots {
                    let seq = try Int64.fetchOne(
                        db,
                        sql: """
                            SELECT h.seq FROM history h JOIN field f ON f.id = h.field JOIN item i ON \(FieldRows.of())
                            JOIN node n ON n.id = h.node
                            WHERE i.item_id = ? AND f.name = ? AND n.node_id = ? AND h.counter = ?
                            """,
                        arguments: [item.rawValue, field.rawValue, dot.node.text, Int64(clamping: dot.counter)]
                    )
                    if let seq, seq < best?.seq ?? .max { best = (seq, dot) }
                }
                return best?.dot
            }
        }
    }
}

extension ReplicaStore {
    /// This replica's most recent live changes under any of its writers (newest writer first,
    /// then newest change; the fields of one change by item and name), and how many of its live changes a holder of `seen` lacks, and has.
    public func localChanges(
        limit: Int,
        seenBy seen: VersionVector
    ) throws(StoreError) -> (recent: [LocalChange], above: Int, atOrBelow: Int) {
        let writers = try self.writers().map(\.id).reversed()
        return try guarded {
            try database.read { db in
                var recent: [LocalChange] = []
                var above = 0
                var below = 0
                for writer in writers {
                    guard let row = try ReplicaStore.nodeRow(of: writer, db: db) else { continue }
                    let split = Int64(clamping: seen[writer])
                    if recent.count < limit {
                        recent += try Row.fetchAll(
                            db,
                            sql: """
                                SELECT v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                                WHERE v.node = ? ORDER BY v.counter DESC, i.item_id, f.name LIMIT ?
                                """,
                            arguments: [row, limit - recent.count]
                        ).map {
                            let counter = UInt64((try $0.decode(atIndex: 0) as Int64))
                            return LocalChange(
                                item: ItemID(unchecked: (try $0.decode(atIndex: 1))),
                                field: FieldName(unchecked: (try $0.decode(atIndex: 2))),
                                counter: counter,
                                writer: writer,
                                seen: counter <= seen[writer]
                            )
                        }
                    }
                    above +=
                        try Int.fetchOne(
                            db,
                            sql: "SELECT count(*) FROM version WHERE node = ? AND counter > ?",
                            arguments: [row, split]
                        ) ?? 0
                    below +=
                        try Int.fetchOne(
                            db,
                            sql: "SELECT count(*) FROM version WHERE node = ? AND counter <= ?",
                            arguments: [row, split]
                        ) ?? 0
                }
                return (recent, above, below)
            }
        }
    }
}

extension ReplicaStore {
    /// The changes this replica wrote (under any of its writers) that the relay refused, newest
    /// first.
    public func ownRejections() throws(StoreError) -> [Rejection] {
        try guarded {
            try database.read { db in
                try Row.fetchAll(db, sql: Rejection.ownQuery).map {
                    Rejection(
                        item: $0[0] as String,
                        field: $0[1] as String,
                        counter: $0[2] as Int64,
                        reason: $0[3] as String
                    )
                }
            }
        }
    }
}
