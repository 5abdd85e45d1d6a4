import Foundation
import GRDB
public import LansyncCore
import LansyncJSON
public import LansyncReplica

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
            let lines = try database.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
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
            let lines = try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            if lines != ["ok"] { for line in lines.prefix(5) { problem("SQLite: " + line) } }
            do { _ = try info() } catch { problem(error.detailText) }
            try database.read { db in
                try Self.checkNodesAndItems(db, problem)
                report.fieldsChecked = try checkFields(db, problem)
                try Self.checkHistory(db, problem)
            }
        } catch {
            problem("reading it failed: \(Self.mapError(error, path: path).detailText)")
        }
        if let first = report.problems.first {
            markDamaged(first)
        } else {
            SafeFile.removeFile(Self.damageMarkPath(path))
        }
        return report
    }

    /// Node rows name a node with a counter; item rows hold values of the right kinds.
    private static func checkNodesAndItems(_ db: Database, _ problem: (String) -> Void) throws {
        for row in try Row.fetchAll(db, sql: "SELECT id, node_id, typeof(counter), counter FROM node") {
            let text: String? = try? row.decode(atIndex: 1)
            if text.flatMap(NodeID.init(text:)) == nil || (try? row.decode(atIndex: 2) as String) != "integer"
                || ((try? row.decode(atIndex: 3) as Int64) ?? -1) < 0
            {
                problem("node row \((try? row.decode(atIndex: 0) as Int64) ?? -1) is not a node id with a counter")
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
    }

    /// Field rows against their live versions, walked side by side in field order (one pass over
    /// each table, not a look-up per field): each state decodes, the version index holds exactly
    /// its live versions, and its conflict flag is right. Returns how many fields it checked.
    private func checkFields(_ db: Database, _ problem: (String) -> Void) throws -> Int {
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
        var checked = 0
        var pendingVersion = try versions.next()
        while let row = try fields.next() {
            checked += 1
            let rowID: Int64 = (try? row.decode(atIndex: 0)) ?? -1
            var indexed = Set<String>()
            while let version = pendingVersion, let field: Int64 = try? version.decode(atIndex: 0), field <= rowID {
                if field == rowID {
                    indexed.insert(
                        "\((try? version.decode(atIndex: 1) as String) ?? "?"):\((try? version.decode(atIndex: 2) as Int64) ?? -1)"
                    )
                }
                pendingVersion = try versions.next()
            }
            guard let item: String = try? row.decode(atIndex: 1), let name: String = try? row.decode(atIndex: 2) else {
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
        return checked
    }

    /// History rows hold values of the right kinds and writes that read.
    private static func checkHistory(_ db: Database, _ problem: (String) -> Void) throws {
        let history = try Row.fetchCursor(db, sql: "SELECT seq, typeof(counter), typeof(timestamp), write FROM history")
        var badHistory = 0
        while let row = try history.next() {
            let kinds = ((try? row.decode(atIndex: 1) as String) ?? "", (try? row.decode(atIndex: 2) as String) ?? "")
            let write = (try? row.decode(atIndex: 3) as String).flatMap(FieldVersion.Write.init(historyText:))
            if kinds != ("integer", "integer") || write == nil { badHistory += 1 }
        }
        if badHistory > 0 { problem("\(badHistory) history row(s) do not read") }
    }

    /// The live dots' origin nodes of one field, from the version index: the nodes a delta must
    /// stop streaming when that field's state does not decode.
    public func indexedNodes(of key: FieldKey) throws(StoreError) -> Set<NodeID> {
        try guarded {
            try database.read { db in
                let texts = try String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT n.node_id FROM version v JOIN node n ON n.id = v.node JOIN field f ON f.id = v.field
                        JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ? AND f.name = ?
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
