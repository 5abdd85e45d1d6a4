import Foundation
import GRDB
import LansyncCore
import LansyncJSON

/// What a check of the replica file found: nothing (sound), or one line per problem.
public struct DamageReport: Sendable, Equatable {
    public var problems: [String]
    /// How many field states were decoded and cross-checked (the full check only).
    public var fieldsChecked = 0

    public var isSound: Bool { problems.isEmpty }
}

/// Damage (DESIGN invariant 9): a replica file that fails its checks is neither written nor sent.
///
/// Whoever first meets the damage (a check, a read that fails, a field state that does not decode)
/// leaves a *damage mark* beside the file (`replica.sqlite.damaged`, one line saying what was
/// found). While it is there every write is refused with a message saying what to do
/// (`lansync check`, `lansync repair`, or restore a backup), the node refuses to start, and reads
/// still work so that what is sound can be exported. A full check that finds nothing wrong
/// removes it; `repair` replaces the file and removes it.
extension ReplicaStore {
    /// The damage mark's path for the replica at `path`.
    public static func damageMarkPath(_ path: String) -> String { path + ".damaged" }

    /// What the damage mark says, nil if the replica is not marked damaged.
    public var damage: String? {
        (try? String(contentsOfFile: Self.damageMarkPath(path), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Leaves the damage mark (keeps the first one: it says what was found first), in one line.
    func markDamaged(_ detail: String) {
        let mark = Self.damageMarkPath(path)
        guard !FileManager.default.fileExists(atPath: mark) else { return }
        _ = FileManager.default.createFile(
            atPath: mark,
            contents: Data((StoreError.oneLine(detail) + "\n").utf8),
            attributes: [.posixPermissions: 0o600]
        )
    }

    /// Refuses a write to a replica marked damaged.
    func refuseIfDamaged() throws(StoreError) {
        if let damage { throw .corrupt(path: path, detail: damage) }
    }

    /// SQLite's `quick_check` (the file's structure, in one pass) and this replica's identity. Run
    /// by the node at every start; marks the replica damaged if it fails.
    public func quickCheck() throws(StoreError) -> DamageReport {
        var report = DamageReport(problems: [])
        do {
            let lines = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            if lines != ["ok"] { report.problems += lines.prefix(5).map { "SQLite: \($0)" } }
        } catch {
            report.problems.append("SQLite cannot read it: \(Self.mapError(error, path: path).detailText)")
        }
        if report.isSound {
            do { _ = try info() } catch { report.problems.append(error.detailText) }
        }
        if let first = report.problems.first { markDamaged(first) }
        return report
    }

    /// Everything `quick_check` sees, plus every row read as lansync reads it: field states
    /// decoded and checked against the version index, their shown value and conflict flag; node,
    /// item and history rows of the right kinds. `lansync check` runs it; a sound result clears
    /// the damage mark, a damaged one sets it.
    public func fullCheck() throws(StoreError) -> DamageReport {
        var report = DamageReport(problems: [])
        func problem(_ text: String) { if report.problems.count < 20 { report.problems.append(text) } }
        do {
            let lines = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            if lines != ["ok"] { for line in lines.prefix(5) { problem("SQLite: " + line) } }
            do { _ = try info() } catch { problem(error.detailText) }
            try pool.read { db in
                for row in try Row.fetchAll(db, sql: "SELECT id, node_id, typeof(counter), counter FROM node") {
                    let text: String? = try? row.decode(atIndex: 1)
                    if text.flatMap(NodeID.init(text:)) == nil || (try? row.decode(atIndex: 2) as String) != "integer"
                        || ((try? row.decode(atIndex: 3) as Int64) ?? -1) < 0
                    {
                        problem(
                            "node row \((try? row.decode(atIndex: 0) as Int64) ?? -1) is not a node id with a counter"
                        )
                    }
                }
                let badItems =
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT count(*) FROM item WHERE typeof(item_id) <> 'text' OR typeof(type) <> 'text' OR typeof(deleted) <> 'integer'
                                OR typeof(conflicts) <> 'integer'
                            """
                    ) ?? 0
                if badItems > 0 { problem("\(badItems) item row(s) hold values of the wrong kind") }
                // Field rows against their live versions, walked side by side in field order (one
                // pass over each table, not a lookup per field).
                let fields = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT f.id, i.item_id, f.name, f.state, f.conflict FROM field f LEFT JOIN item i ON i.id = f.item ORDER BY f.id
                        """
                )
                let versions = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT v.field, n.node_id, v.counter FROM version v JOIN node n ON n.id = v.node ORDER BY v.field
                        """
                )
                var pendingVersion = try versions.next()
                while let row = try fields.next() {
                    report.fieldsChecked += 1
                    let rowID: Int64 = (try? row.decode(atIndex: 0)) ?? -1
                    var indexed = Set<String>()
                    while let version = pendingVersion, let field: Int64 = try? version.decode(atIndex: 0),
                        field <= rowID
                    {
                        if field == rowID {
                            indexed.insert(
                                "\((try? version.decode(atIndex: 1) as String) ?? "?"):\((try? version.decode(atIndex: 2) as Int64) ?? -1)"
                            )
                        }
                        pendingVersion = try versions.next()
                    }
                    guard let item: String = try? row.decode(atIndex: 1), let name: String = try? row.decode(atIndex: 2)
                    else {
                        problem("field row \(rowID) has no valid item or name")
                        continue
                    }
                    guard let blob: Data = try? row.decode(atIndex: 3),
                        let state = try? StoredState.decode(Array(blob), db: db, nodes: nodeRows)
                    else {
                        problem("the state of \(item).\(name) (field row \(rowID)) does not decode")
                        continue
                    }
                    let live = Set(state.versions.map { "\($0.dot.node.text):\($0.dot.counter)" })
                    if indexed != live { problem("the version index disagrees with the state of \(item).\(name)") }
                    let flagged: Bool? = try? row.decode(atIndex: 4)
                    if flagged != (name != FieldName.deleted.rawValue && state.hasConflict) {
                        problem("the conflict flag of \(item).\(name) disagrees with its state")
                    }
                }
                let history = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT seq, typeof(counter), typeof(timestamp), write FROM history
                        """
                )
                var badHistory = 0
                while let row = try history.next() {
                    let kinds = (
                        (try? row.decode(atIndex: 1) as String) ?? "", (try? row.decode(atIndex: 2) as String) ?? ""
                    )
                    let write = (try? row.decode(atIndex: 3) as String).flatMap(FieldVersion.Write.init(historyText:))
                    if kinds != ("integer", "integer") || write == nil { badHistory += 1 }
                }
                if badHistory > 0 { problem("\(badHistory) history row(s) do not read") }
            }
        } catch {
            problem("reading it failed: \(Self.mapError(error, path: path).detailText)")
        }
        if let first = report.problems.first {
            markDamaged(first)
        } else {
            try? FileManager.default.removeItem(atPath: Self.damageMarkPath(path))
        }
        return report
    }

    /// The live dots' origin nodes of one field, from the version index: the nodes a delta must
    /// stop streaming when that field's state does not decode.
    func indexedNodes(of key: FieldKey) throws(StoreError) -> Set<NodeID> {
        try guarded {
            try pool.read { db in
                let texts = try String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT n.node_id FROM version v JOIN node n ON n.id = v.node JOIN field f ON f.id = v.field
                        JOIN item i ON i.id = f.item WHERE i.item_id = ? AND f.name = ?
                        """,
                    arguments: [key.item.rawValue, key.field.rawValue]
                )
                return Set(texts.compactMap(NodeID.init(text:)))
            }
        }
    }
}

extension StoreError {
    /// The part of the message that says what is wrong, for reports that add their own advice.
    public var detailText: String {
        if case let .corrupt(_, detail) = self { return detail }
        return description
    }
}

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
        let info = try old.info()
        let writers = (try? old.writers()) ?? []
        var names: [NodeID: String] = [:]
        if let known = try? old.nodeNames() { names = known }
        var report = RepairReport()
        var sound: [FieldUpdate] = []
        var lostRows: [Int64] = []
        // Row by row, so one unreadable page costs only the rows on it. A field whose item row is
        // gone counts as lost too.
        var unreadable = false
        var maxRow: Int64 = 0
        do {
            maxRow = try old.pool.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM field") } ?? 0
        } catch {
            unreadable = true
        }
        for rowID in stride(from: Int64(1), through: maxRow, by: 1) {
            do {
                let read = try old.pool.read { db -> FieldUpdate? in
                    guard
                        let row = try Row.fetchOne(
                            db,
                            sql: """
                                SELECT i.item_id, f.name, f.state FROM field f LEFT JOIN item i ON i.id = f.item WHERE f.id = ?
                                """,
                            arguments: [rowID]
                        )
                    else { return nil }
                    let item: String = try row.decode(atIndex: 0)
                    let name: String = try row.decode(atIndex: 1)
                    let blob: Data = try row.decode(atIndex: 2)
                    let id = try ItemID(item)
                    let field =
                        name == FieldName.type.rawValue
                        ? FieldName.type
                        : name == FieldName.deleted.rawValue ? FieldName.deleted : try FieldName(name)
                    return FieldUpdate(
                        key: FieldKey(item: id, field: field),
                        state: try StoredState.decode(Array(blob), db: db, nodes: old.nodeRows)
                    )
                }
                if let read { sound.append(read) }  // nil: no such row
            } catch {
                lostRows.append(rowID)
            }
        }
        report.salvaged = sound.count
        report.lost = lostRows.count
        var claims = (try? old.versionVector()) ?? VersionVector()
        if unreadable {
            claims = VersionVector()
        } else if !lostRows.isEmpty {
            let lowest: [NodeID: UInt64]? = try? old.pool.read { db in
                var lowest: [NodeID: UInt64] = [:]
                for rowID in lostRows {
                    for row in try Row.fetchAll(
                        db,
                        sql: """
                            SELECT n.node_id, min(v.counter) FROM version v JOIN node n ON n.id = v.node WHERE v.field = ? GROUP BY n.node_id
                            """,
                        arguments: [rowID]
                    ) {
                        guard let node = NodeID(text: try row.decode(atIndex: 0)) else {
                            throw DecodingError("bad node id", offset: 0)
                        }
                        let counter = UInt64(try row.decode(atIndex: 1) as Int64)
                        lowest[node] = min(lowest[node] ?? .max, counter)
                    }
                }
                return lowest
            }
            if let lowest {
                claims = VersionVector(
                    Dictionary(
                        uniqueKeysWithValues: claims.nodes.map { node in
                            (node, min(claims[node], lowest[node].map { $0 - 1 } ?? .max))
                        }
                    )
                )
            } else {
                claims = VersionVector()
            }
        }

        let fresh = path + ".repairing"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: fresh + suffix) }
        let rebuilt = try create(
            path: fresh,
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            nodeName: info.nodeName,
            fingerprint: info.fingerprint,
            historyLimit: info.historyLimit,
            lease: lease
        )
        try rebuilt.guarded {
            try rebuilt.pool.write { db in
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
        let newWriter = try rebuilt.info().writerID
        rebuilt.lease.record(newWriter, stamp: try rebuilt.changeStamp())

        let stamp = Int(Date().timeIntervalSince1970)
        report.damagedCopy = path + ".damaged-\(stamp)"
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
        try? FileManager.default.removeItem(atPath: damageMarkPath(path))
        return report
    }
}
