import Foundation
import GRDB
import LansyncCore
public import LansyncReplica

/// What `repair` did.
public struct RepairReport: Sendable, Equatable {
    /// Field states copied into the new file.
    public var salvaged = 0
    /// Field rows that could not be read or decoded, left behind.
    public var lost = 0
    /// Where the damaged file was moved.
    public var damagedCopy = ""
}

extension ReplicaStore {
    /// Rebuilds the damaged replica at `path` from what is sound in it, in place: a new file with
    /// the same identity takes every field state that still reads and decodes, and a version
    /// vector that claims nothing the lost rows held, so peers send those again at the next sync
    /// (and receive this replica's own edits that survived). Local writes continue under a new
    /// writer. The damaged file is kept beside it (`replica.sqlite.damaged-TIME`). The node must
    /// not be running.
    ///
    /// The vector keeps each origin's entry below the lowest live write the version index names in
    /// a lost row; if the index cannot be read, it claims nothing at all and peers resend everything.
    public static func repair(
        path: String,
        wallMilliseconds: UInt64,
        lease: WriterLease = .standard()
    ) throws(StoreError) -> RepairReport {
        let old = try open(path: path, lease: lease)
        let salvage = old.salvage()
        var report = RepairReport()
        report.salvaged = salvage.sound.count
        report.lost = salvage.lostRows.count
        let claims = old.claims(losing: salvage)
        let fresh = path + ".repairing"
        for suffix in ["", "-wal", "-shm"] { SafeFile.removeFile(fresh + suffix) }
        try old.rebuild(at: fresh, from: salvage.sound, claiming: claims, wallMilliseconds: wallMilliseconds)
        report.damagedCopy = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
        do {
            try FileManager.default.moveItem(atPath: path, toPath: report.damagedCopy)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.moveItem(atPath: path + suffix, toPath: report.damagedCopy + suffix)
            }
            try FileManager.default.moveItem(atPath: fresh, toPath: path)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: fresh + suffix) {
                try FileManager.default.moveItem(atPath: fresh + suffix, toPath: path + suffix)
            }
        } catch {
            throw .io(
                "cannot put the rebuilt replica in place of \(path) (\(error.localizedDescription)): the rebuilt one is \(fresh)"
            )
        }
        SafeFile.removeFile(damageMarkPath(path))
        return report
    }

    /// What of a damaged file still reads: the field states that read and decode, the field rows
    /// that do not, and whether even the field table's size could not be read.
    private struct Salvage {
        var sound: [FieldUpdate] = []
        var lostRows: [Int64] = []
        var unreadable = false
    }

    /// Reads the field table row by row, so one unreadable page costs only the rows on it. A
    /// field whose item row is gone counts as lost too. The rows are found an item's range at a
    /// time (``FieldRows``); a range that does not read is probed row by row.
    private func salvage() -> Salvage {
        var salvage = Salvage()
        var maxRow: Int64 = 0
        do {
            maxRow = try database.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM field") } ?? 0
        } catch {
            salvage.unreadable = true
        }
        // The field rows the version index names, read once if a range of rows does not read:
        // those are the rows to probe one by one (every saved field holds a version), not the
        // range's 4,096 possible ones. (A damaged page above many items' rows made every range
        // fail, and probing each of their possible rows one read at a time ran for hours.)
        var indexed: Set<Int64>??
        for item in stride(from: Int64(0), through: maxRow >> FieldRows.shift, by: 1) {
            let range = FieldRows.range(item: item)
            var rows: [Int64]! = try? database.read { db in
                try Int64.fetchAll(
                    db,
                    sql: "SELECT id FROM field WHERE id BETWEEN ? AND ?",
                    arguments: FieldRows.arguments(item: item)
                )
            }
            if rows == nil {
                if indexed == nil {
                    indexed = .some(
                        try? database.read { db in Set(try Int64.fetchAll(db, sql: "SELECT field FROM version")) }
                    )
                }
                rows = indexed??.filter { range.contains($0) }.sorted() ?? Array(range)
            }
            for rowID in rows {
                do {
                    if let read = try database.read({ db in try salvageField(row: rowID, db: db) }) {
                        salvage.sound.append(read)
                    }
                } catch {
                    salvage.lostRows.append(rowID)
                }
            }
        }
        return salvage
    }

    /// One field row as a field state; nil if there is no such row; throws if it does not read.
    private func salvageField(row rowID: Int64, db: Database) throws -> FieldUpdate? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT i.item_id, f.name, f.state FROM field f LEFT JOIN item i ON i.id = f.item WHERE f.id = ?
                    """,
                arguments: [rowID]
            )
        else { return nil }
        let name: String = try row.decode(atIndex: 1)
        let blob: Data = try row.decode(atIndex: 2)
        let field =
            name == FieldName.type.rawValue
            ? FieldName.type : name == FieldName.deleted.rawValue ? FieldName.deleted : try FieldName(name)
        return FieldUpdate(
            key: FieldKey(item: try ItemID(try row.decode(atIndex: 0) as String), field: field),
            state: try StoredState.decode(Array(blob), db: db, nodes: nodeRows)
        )
    }

    /// The version vector the rebuilt file may claim: this one's, kept below the lowest live
    /// write the version index names in a lost row; nothing at all if that cannot be read.
    private func claims(losing salvage: Salvage) -> VersionVector {
        let claims = (try? versionVector()) ?? VersionVector()
        if salvage.unreadable { return VersionVector() }
        guard !salvage.lostRows.isEmpty else { return claims }
        // One pass over the version index (it has no index by field: a look-up per lost row
        // scanned it whole each time).
        let lost = Set(salvage.lostRows)
        let lowest: [NodeID: UInt64]? = try? database.read { db in
            var lowest: [NodeID: UInt64] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT v.field, n.node_id, v.counter FROM version v JOIN node n ON n.id = v.node"
            )
            while let row = try rows.next() {
                guard lost.contains(row[0]) else { continue }
                guard let node = NodeID(text: try row.decode(atIndex: 1)) else {
                    throw DecodingError("bad node id", offset: 0)
                }
                lowest[node] = min(lowest[node] ?? .max, UInt64(try row.decode(atIndex: 2) as Int64))
            }
            return lowest
        }
        guard let lowest else { return VersionVector() }
        return VersionVector(
            Dictionary(
                uniqueKeysWithValues: claims.nodes.map { node in
                    (node, min(claims[node], lowest[node].map { $0 - 1 } ?? .max))
                }
            )
        )
    }

    /// Makes a new replica file at `fresh` with this one's identity, node names and writers, the
    /// `sound` field states and `claims` as its version vector, writing on under a new writer.
    private func rebuild(
        at fresh: String,
        from sound: [FieldUpdate],
        claiming claims: VersionVector,
        wallMilliseconds: UInt64
    ) throws(StoreError) {
        let info = try info()
        let writers = (try? writers()) ?? []
        let names = (try? nodeNames()) ?? [:]
        let rebuilt = try Self.create(
            path: fresh,
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            nodeName: info.nodeName,
            fingerprint: info.fingerprint,
            historyLimit: info.historyLimit,
            lease: lease
        )
        try rebuilt.guarded {
            try rebuilt.database.write { db in
                for (node, name) in names {
                    try db.execute(
                        sql:
                            "INSERT INTO node(node_id, name) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET name = excluded.name",
                        arguments: [node.text, name]
                    )
                }
                for writer in writers where writer.id != info.nodeID {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO writer(writer_id, started, reason) VALUES (?, ?, ?)",
                        arguments: [writer.id.text, Int64(clamping: writer.started), writer.reason.rawValue]
                    )
                }
                // Its change feed gave numbers this file must not give again (the damaged file
                // may not say how far it got).
                try Transaction.raiseChangeSequence(to: Transaction.changeSequenceFloor, db: db)
                // The file it was rebuilt from may have been ahead of anything this writer's marker
                // proves: write on under a new writer.
                try Transaction.startWriter(.writer(for: info.nodeID), name: info.nodeName, reason: .repair, db: db)
            }
        }
        var start = 0
        while start < sound.count {
            let chunk = Array(sound[start..<min(start + 1000, sound.count)])
            try rebuilt.apply(DeltaBatch(updates: chunk, covers: VersionVector()), wallMilliseconds: wallMilliseconds)
            start += chunk.count
        }
        try rebuilt.apply(DeltaBatch(updates: [], covers: claims), wallMilliseconds: wallMilliseconds)
        try carrySignedRuns(to: rebuilt)
        rebuilt.lease.record(try rebuilt.info().writerID, stamp: try rebuilt.changeStamp())
    }

    /// Copies the signed runs, kept leaves and member certificates that still read to `rebuilt`, for the writers it
    /// holds versions of: the versions it kept stay provable to peers (Docs/SECURITY.md, "Signed
    /// writes"). A run whose versions were lost cannot be made whole there, and goes unproven.
    private func carrySignedRuns(to rebuilt: ReplicaStore) throws(StoreError) {
        let runs =
            (try? database.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT n.node_id, r.first, r.last, r.leaves, r.key, r.signature FROM signed_run r JOIN node n ON n.id = r.node"
                )
            }) ?? []
        let leaves =
            (try? database.read { db in
                try Row.fetchAll(
                    db,
                    sql: "SELECT n.node_id, l.counter, l.field, l.digest FROM run_leaf l JOIN node n ON n.id = l.node"
                )
            }) ?? []
        let certificates =
            (try? database.read { db in try Row.fetchAll(db, sql: "SELECT key, der FROM member_certificate") }) ?? []
        guard !runs.isEmpty else { return }
        try rebuilt.guarded {
            try rebuilt.database.write { db in
                for certificate in certificates {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO member_certificate (key, der) VALUES (?, ?)",
                        arguments: [certificate[0], certificate[1]]
                    )
                }
                for run in runs {
                    try db.execute(
                        sql: """
                            INSERT OR IGNORE INTO signed_run (node, first, last, leaves, key, signature)
                            SELECT id, ?, ?, ?, ?, ? FROM node WHERE node_id = ?
                            """,
                        arguments: [run[1], run[2], run[3], run[4], run[5], run[0]]
                    )
                }
                for leaf in leaves {
                    try db.execute(
                        sql:
                            "INSERT OR IGNORE INTO run_leaf (node, counter, field, digest) SELECT id, ?, ?, ? FROM node WHERE node_id = ?",
                        arguments: [leaf[1], leaf[2], leaf[3], leaf[0]]
                    )
                }
            }
        }
    }
}
