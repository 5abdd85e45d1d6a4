import Foundation
import GRDB
import LansyncCore
import LansyncJSON
import LansyncReplica

/// The statements one write transaction runs, with the clock and node rows it has loaded.
/// Keeping the version index, history and denormalised columns in step with the field states
/// happens only here.
struct Transaction {
    let db: Database
    let historyLimit: Int
    var clock: HybridLogicalClock
    private var nodeRows: [NodeID: Int64] = [:]
    /// The node row asked for last: a transaction's fields are mostly written by one node (an
    /// import's, a batch's sender), and this spares hashing its id for each of them.
    private var lastNodeRow: (id: NodeID, row: Int64)?
    /// The statements run for every item and field written, by ``HotStatement``, taken from
    /// GRDB's cache once a transaction: its look-up hashes the whole SQL text each time.
    private var hot = [Statement?](repeating: nil, count: HotStatement.allCases.count)
    /// Which node each `node` row names, for reading field states (``StoredState``).
    let nodes: NodeRows
    /// The change stamp of this transaction, once a field save needed it.
    private var pendingStamp: UInt64?
    /// Where this transaction's changes come from, for the change feed.
    var origin = ChangeOrigin.local
    /// The fields indexed for queries, read at the first save.
    var indexedNames: Set<String>?
    /// The items whose search text changed without a feed number (``refreshSearchTexts()``).
    var searchChanges: Set<Int64> = []
    /// The commit's wall-clock time for the change feed, read at the first change.
    var commitTime: Int64?
    /// The feed's last sequence number, read at the first change and counted on from there.
    var lastSeq: Int64?
    /// The row the next new field of an item takes, for the item this transaction last created
    /// or last gave a row after its last one (``FieldRows``): an import or a batch adds an item's
    /// fields one after another, and each would otherwise look up the item's last row (a fifth
    /// of an import's time). Only this transaction writes, and rows it removes leave the places
    /// above free.
    var nextFieldRow: (item: Int64, row: Int64)?
    /// The writer's marker to record once this transaction commits (``WriterLease``): set by a
    /// transaction that changed what the replica holds, so that a file restored to before it is
    /// seen as rolled back.
    var writerMarker: (writer: NodeID, stamp: UInt64)?

    init(db: Database, historyLimit: Int, nodes: NodeRows = NodeRows()) throws {
        self.db = db
        self.historyLimit = historyLimit
        self.nodes = nodes
        let raw =
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'clock'")).flatMap {
                UInt64($0)
            } ?? 0
        clock = HybridLogicalClock(latest: HLCTimestamp(rawValue: raw))
    }

    /// Counts this transaction as one that changed fields (meta 'changes'); returns the new count.
    @discardableResult
    func countChange() throws -> UInt64 {
        try db.cachedStatement(sql: "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'changes'")
            .execute()
        let stamp = try changeStamp()
        assert(pendingStamp == nil || pendingStamp == stamp, "a transaction counts its change once")
        return stamp
    }

    /// The change stamp this transaction commits with: it changes a field, so it ends with
    /// ``countChange()``, and transactions that write are serial.
    private mutating func stampOfThisTransaction() throws -> UInt64 {
        if let pendingStamp { return pendingStamp }
        let stamp = try changeStamp() + 1
        pendingStamp = stamp
        return stamp
    }

    /// meta 'changes': how many transactions changed a field in this file.
    func changeStamp() throws -> UInt64 { try ReplicaStore.changeStamp(db: db) }

    func saveClock() throws {
        try db.cachedStatement(sql: "UPDATE meta SET value = ? WHERE key = 'clock'").execute(arguments: [
            String(clock.latest.rawValue)
        ])
    }

    func setMeta(_ key: String, _ value: String) throws { try Self.setMeta(key, value, db: db) }

    /// Sets a `meta` entry that holds binary (base64 text: the table's values are text).
    func setMeta(_ key: String, bytes: [UInt8]) throws { try setMeta(key, Data(bytes).base64EncodedString()) }

    /// The binary a `meta` entry holds (``setMeta(_:bytes:)``); nil if it is absent or not base64.
    static func metaBytes(_ key: String, db: Database) throws -> [UInt8]? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [key])
            .flatMap { Data(base64Encoded: $0) }.map(Array.init)
    }

    /// Sets one `meta` entry, the one statement every setting and mark goes through.
    static func setMeta(_ key: String, _ value: String, db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
        ).execute(
            arguments: [key, value]
        )
    }

    mutating func nodeRow(_ id: NodeID) throws -> Int64 {
        if let last = lastNodeRow, last.id == id { return last.row }
        if let row = nodeRows[id] {
            lastNodeRow = (id, row)
            return row
        }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO node(node_id) VALUES (?)").execute(arguments: [id.text])
        let row = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM node WHERE node_id = ?"),
            arguments: [id.text]
        )!
        nodeRows[id] = row
        lastNodeRow = (id, row)
        return row
    }

    /// One of the statements every item and field write runs, prepared once per connection
    /// and looked up once per transaction.
    mutating func statement(_ which: HotStatement) throws -> Statement {
        if let statement = hot[which.rawValue] { return statement }
        let statement = try db.cachedStatement(sql: which.sql)
        hot[which.rawValue] = statement
        return statement
    }

    func counter(of nodeRow: Int64) throws -> UInt64 {
        UInt64(
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT counter FROM node WHERE id = ?"), arguments: [nodeRow])
                ?? 0
        )
    }

    func setCounter(of nodeRow: Int64, to counter: UInt64) throws {
        try db.cachedStatement(sql: "UPDATE node SET counter = ? WHERE id = ?").execute(arguments: [
            Int64(counter), nodeRow,
        ])
    }

    /// The replica's version vector, restricted to `nodes`.
    func versionVector(of nodes: [NodeID]) throws -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        let statement = try db.cachedStatement(sql: "SELECT counter FROM node WHERE node_id = ?")
        for node in nodes {
            counters[node] = UInt64(clamping: try Int64.fetchOne(statement, arguments: [node.text]) ?? 0)
        }
        return VersionVector(counters)
    }

    func raiseCounter(of nodeRow: Int64, to counter: UInt64) throws {
        try db.cachedStatement(sql: "UPDATE node SET counter = max(counter, ?) WHERE id = ?").execute(
            arguments: [Int64(clamping: counter), nodeRow]
        )
    }

    // MARK: Writers (``WriterContinuity``)

    static func nodeID(db: Database) throws -> NodeID {
        guard
            let id = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'node_id'"))
                .flatMap(
                    NodeID.init(text:)
                )
        else { throw DecodingError("table meta holds no valid node_id", offset: 0) }
        return id
    }

    static func currentWriter(db: Database) throws -> NodeID {
        let meta =
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'writer_id'"))
            ?? String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'node_id'"))
        guard let id = meta.flatMap(NodeID.init(text:)) else {
            throw DecodingError("table meta holds no valid writer_id", offset: 0)
        }
        return id
    }

    /// The writer for this transaction's local writes: the current one if its continuity is
    /// proven, no peer has witnessed a rollback, and it names this node; else a new one, started
    /// in this transaction.
    mutating func claimWriter(lease: WriterLease, name: String) throws -> ClaimedWriter {
        let current = try Self.currentWriter(db: db)
        let node = try Self.nodeID(db: db)
        let retiredBy = try String.fetchOne(
            db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'writer_retired'")
        )
        let retired = retiredBy == "1" || retiredBy == Self.retiredForRole
        let row = try nodeRow(current)
        let held = try changeStamp()
        let marker = lease.marker(for: current)
        let named = current.isWriter(of: node)
        if !retired, named, WriterContinuity.isProven(marker: marker, held: held) {
            return ClaimedWriter(id: current, row: row, counter: try counter(of: row))
        }
        let reason: WriterRecord.Reason =
            retiredBy == Self.retiredForRole
            ? .role
            : retired
                ? .witness
                : marker != nil && !WriterContinuity.isProven(marker: marker, held: held)
                    ? .restored : !named ? .named : .unproven
        // A rolled-back file's feed numbers were given before: jump past them.
        if reason == .witness || reason == .restored {
            try Self.raiseChangeSequence(to: Self.changeSequenceFloor, db: db)
        }
        let fresh = NodeID.writer(for: node)
        lease.record(fresh, stamp: held)
        try Self.startWriter(fresh, name: name, reason: reason, db: db)
        return ClaimedWriter(id: fresh, row: try nodeRow(fresh), counter: 0)
    }

    /// Meta `writer_retired`'s value when the member was a reader and may write again
    /// (``ReplicaStore/setReadOnly(_:retiring:)``); "1" is a peer's witness of a rollback.
    static let retiredForRole = "role"

    /// Makes `id` the current writer (recorded in table `writer` with why).
    static func startWriter(_ id: NodeID, name: String?, reason: WriterRecord.Reason, db: Database) throws {
        try db.execute(
            sql:
                "INSERT INTO node(node_id, name) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET name = excluded.name",
            arguments: [id.text, name]
        )
        for (key, value) in [("writer_id", id.text), ("writer_retired", "0")] { try setMeta(key, value, db: db) }
        let now = Int64(clamping: WallClock.milliseconds)
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO writer(writer_id, started, reason) VALUES (?, ?, ?)")
            .execute(
                arguments: [id.text, now, reason.rawValue]
            )
    }

    // MARK: Streams (``StreamResume``)

    static func stream(db: Database, from peer: NodeID) throws -> (covers: VersionVector, incarnation: NodeID)? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT incarnation, covers FROM stream WHERE peer_id = ?"),
                arguments: [peer.text]
            )
        else { return nil }
        guard let incarnation = NodeID(text: try row.decode(atIndex: 0)) else {
            throw DecodingError("bad incarnation in table stream", offset: 0)
        }
        var reader = ByteReader(Array(try row.decode(atIndex: 1) as Data))
        return (try reader.versionVector(), incarnation)
    }

    /// Adds a batch's covers to `peer`'s stream (a stream of another incarnation starts over).
    func recordStream(from peer: NodeID, incarnation: NodeID, covers: VersionVector) throws {
        var progress = VersionVector()
        if let existing = try Self.stream(db: db, from: peer), existing.incarnation == incarnation {
            progress = existing.covers
        }
        progress.join(covers)
        var writer = ByteWriter()
        writer.versionVector(progress)
        try db.cachedStatement(
            sql: """
                INSERT INTO stream(peer_id, incarnation, covers) VALUES (?, ?, ?)
                ON CONFLICT(peer_id) DO UPDATE SET incarnation = excluded.incarnation, covers = excluded.covers
                """
        ).execute(arguments: [peer.text, incarnation.text, Data(writer.bytes)])
    }

    func itemRow(_ id: ItemID) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM item WHERE item_id = ?"), arguments: [id.rawValue])
    }

    /// The item's row, and whether it is collected (reduced to its minimal tombstone).
    mutating func itemRowAndCollection(_ id: ItemID) throws -> (row: Int64, collected: Bool)? {
        var found: (row: Int64, collected: Bool)?
        try statement(.findItemAndCollection).forEachRow(
            binding: { $0.text(1, id.rawValue) },
            { found = ($0.int(0), $0.int(1) != 0) }
        )
        return found
    }

    /// Inserts a new item with the derived columns of `state`.
    mutating func insertItem(_ id: ItemID, from state: ItemState) throws -> Int64 {
        try statement(.insertItem).run { bind in
            bind.text(1, id.rawValue)
            bind.text(2, state.type)
            bind.bool(3, state.isDeleted)
            bind.int(4, state.conflictCount)
        }
        return fieldsStartFresh(item: db.lastInsertedRowID)
    }

    /// Inserts a new item of the default type, whose fields are about to arrive (a peer's batch).
    mutating func insertItem(_ id: ItemID) throws -> Int64 {
        try statement(.insertBareItem).run { bind in
            bind.text(1, id.rawValue)
            bind.text(2, ItemState.defaultType)
        }
        return fieldsStartFresh(item: db.lastInsertedRowID)
    }

    /// A new item's first field takes the first row of its range with no look-up: the range is
    /// empty (an item's field rows go with it when it is purged, so a row id used again finds
    /// none). Returns `item`.
    private mutating func fieldsStartFresh(item: Int64) -> Int64 {
        nextFieldRow = (item, FieldRows.range(item: item).lowerBound)
        return item
    }

    mutating func loadItem(_ id: ItemID) throws -> LoadedItem {
        var found: Int64?
        try statement(.findItem).forEachRow(binding: { $0.text(1, id.rawValue) }, { found = $0.int(0) })
        guard let found else { return LoadedItem(row: nil, state: ItemState(id: id), fieldRows: [:]) }
        return try Self.loadItem(db: db, id, row: found, nodes: nodes)
    }

    /// How many user fields (not `_type`, `_deleted`) the item in row `item` has.
    static func userFieldCount(db: Database, item: Int64) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(
                sql: "SELECT count(*) FROM field WHERE id BETWEEN ? AND ? AND substr(name, 1, 1) <> '_'"
            ),
            arguments: FieldRows.arguments(item: item)
        ) ?? 0
    }

    static func loadItem(db: Database, _ id: ItemID, nodes: NodeRows) throws -> LoadedItem {
        guard
            let row = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT id FROM item WHERE item_id = ?"),
                arguments: [id.rawValue]
            )
        else {
            return LoadedItem(row: nil, state: ItemState(id: id), fieldRows: [:])
        }
        return try loadItem(db: db, id, row: row, nodes: nodes)
    }

    /// The item of row `row` with its fields.
    static func loadItem(db: Database, _ id: ItemID, row: Int64, nodes: NodeRows) throws -> LoadedItem {
        var fields: [FieldName: FieldState] = [:]
        var rows: [FieldName: Int64] = [:]
        for field in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT id, name, state FROM field WHERE id BETWEEN ? AND ?"),
            arguments: FieldRows.arguments(item: row)
        ) {
            let name = FieldName(unchecked: (try field.decode(atIndex: 1)))
            fields[name] = try StoredState.decode(Array((try field.decode(atIndex: 2) as Data)), db: db, nodes: nodes)
            rows[name] = (try field.decode(atIndex: 0))
        }
        return LoadedItem(row: row, state: ItemState(id: id, fields: fields), fieldRows: rows)
    }

    mutating func loadField(item: Int64, name: FieldName) throws -> (row: Int64, state: FieldState)? {
        // Read in place (a merge loads the field it merges into): no `Row`, no `Data` copy.
        var found: (row: Int64, bytes: [UInt8])?
        let range = FieldRows.range(item: item)
        try statement(.loadField).forEachRow(
            binding: { bind in
                bind.int(1, range.lowerBound)
                bind.int(2, range.upperBound)
                bind.text(3, name.rawValue)
            },
            { columns in found = (columns.int(0), columns.blob(1) ?? []) }
        )
        guard let found else { return nil }
        return (found.row, try StoredState.decode(found.bytes, db: db, nodes: nodes))
    }

    /// Writes a field's new state with its shown value, and brings the version index and history
    /// in step. Returns the field's row.
    mutating func saveField(_ save: FieldSave) throws -> Int64 {
        let (item, itemID, name, row, old, new) = (save.item, save.itemID, save.name, save.row, save.old, save.new)
        let conflict = name != .deleted && new.hasConflict
        // Every node the state names gets its row first; the encoder reads them from the
        // transaction's own table of rows (no table built per field).
        try resolveNodeRows(of: new)
        let blob = StoredState.encode(new, rows: nodeRows, recent: lastNodeRow)
        let change = try nextChange(name: name, old: old, new: new, conflict: conflict)
        let fieldRow = try writeField(row: row, item: item, name: name, conflict: conflict, state: blob, change: change)
        // A field holds a version or a few: arrays, not sets (a set hashes every dot).
        let oldDots = old?.versions.map(\.dot) ?? []
        let newDots = new.versions.map(\.dot)
        try indexVersions(of: new, field: fieldRow, oldDots: oldDots, newDots: newDots, item: itemID, name: name)
        try recordHistory(field: fieldRow, old: old, new: new, newDots: newDots, overruled: save.overruled)
        try indexField(item: item, name: name, new: new)
        try linkField(item: item, name: name, old: old, new: new)
        return fieldRow
    }

    /// Gives every node `state` names its row (in id order, so new rows are numbered the same
    /// way whatever the order of a dictionary), without building that list for the usual state
    /// of one node.
    private mutating func resolveNodeRows(of state: FieldState) throws {
        let context = state.context.counters
        if context.count == 1, let only = context.first?.key,
            !state.versions.contains(where: { if case .overrule = $0.write { true } else { false } })
        {
            _ = try nodeRow(only)
            return
        }
        for node in StoredState.nodes(of: state) { _ = try nodeRow(node) }
    }

    /// Updates the field's row, or inserts it (a new row of the item's range); returns the row.
    /// These statements and the version index's run once per field: bound directly
    /// (BoundStatement.swift).
    private mutating func writeField(
        row: Int64?,
        item: Int64,
        name: FieldName,
        conflict: Bool,
        state: [UInt8],
        change: (seq: Int64, at: Int64, kind: ChangeKind)
    ) throws -> Int64 {
        if let row {
            try statement(.updateField).run { bind in
                bind.bool(1, conflict)
                bind.blob(2, state)
                bind.int(3, change.seq)
                bind.int(4, change.at)
                bind.int(5, change.kind.rawValue)
                bind.int(6, row)
            }
            return row
        }
        let fieldRow = try newFieldRow(item: item)
        try statement(.insertField).run { bind in
            bind.int(1, fieldRow)
            bind.text(2, name.rawValue)
            bind.bool(3, conflict)
            bind.blob(4, state)
            bind.int(5, change.seq)
            bind.int(6, change.at)
            bind.int(7, change.kind.rawValue)
        }
        return fieldRow
    }

    /// Removes the index rows of the versions the new state no longer holds and adds those of
    /// the versions it gained (with the rejections an overrule records).
    private mutating func indexVersions(
        of new: FieldState,
        field fieldRow: Int64,
        oldDots: [Dot],
        newDots: [Dot],
        item itemID: ItemID,
        name: FieldName
    ) throws {
        let superseded = oldDots.filter { !newDots.contains($0) }
        for dot in superseded {
            let node = try nodeRow(dot.node)
            try statement(.deleteVersion).run { bind in
                bind.int(1, node)
                bind.int(2, Int64(dot.counter))
                bind.int(3, fieldRow)
            }
        }
        if !superseded.isEmpty {
            // A stream that has not reached the removed rows yet finds the field by this stamp.
            try db.cachedStatement(sql: "UPDATE field SET superseded_at = ? WHERE id = ?")
                .execute(arguments: [Int64(clamping: try stampOfThisTransaction()), fieldRow])
        }
        for version in new.versions where !oldDots.contains(version.dot) {
            let node = try nodeRow(version.dot.node)
            try statement(.insertVersion).run { bind in
                bind.int(1, node)
                bind.int(2, Int64(version.dot.counter))
                bind.int(3, fieldRow)
            }
            if case let .overrule(_, rejected, reason) = version.write {
                try recordRejections(rejected, reason: reason, item: itemID, name: name)
            }
        }
    }

    /// Notes the versions an overrule refused (table `rejection`, which `status` reads).
    private func recordRejections(_ rejected: [Dot], reason: String, item: ItemID, name: FieldName) throws {
        for dot in rejected {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO rejection(node_id, counter, item_id, field, reason) VALUES (?, ?, ?, ?, ?)"
            )
            .execute(arguments: [dot.node.text, Int64(clamping: dot.counter), item.rawValue, name.rawValue, reason])
        }
    }

    /// The row a new field of `item` takes (``FieldRows``), remembered for the item's next one.
    private mutating func newFieldRow(item: Int64) throws -> Int64 {
        if let next = nextFieldRow, next.item == item, FieldRows.range(item: item).contains(next.row) {
            nextFieldRow = (item, next.row + 1)
            return next.row
        }
        let next = try FieldRows.next(item: item, db: db)
        nextFieldRow = next.isLast ? (item, next.row + 1) : nil
        return next.row
    }

    /// Keeps in `history` what the field state no longer shows: versions it superseded, and,
    /// while the field is in conflict, its siblings (in the order they arrived, which the relay's
    /// first-seen policy reads). A version never superseded and never in conflict lives only in
    /// the state. Each field keeps at most historyLimit versions, live ones included.
    ///
    /// `overruled`: versions that arrived and were overruled in the same transaction (a revoked
    /// node's writes), so that history shows what was refused.
    mutating func recordHistory(
        field fieldRow: Int64,
        old: FieldState?,
        new: FieldState,
        newDots: [Dot],
        overruled: [FieldVersion] = []
    ) throws {
        let recorded = FieldHistory.recorded(old: old, new: new, newDots: newDots, overruled: overruled)
        guard !recorded.isEmpty else { return }
        for version in recorded {
            let node = try nodeRow(version.dot.node)
            try statement(.insertHistory).run { bind in
                bind.int(1, fieldRow)
                bind.int(2, node)
                bind.int(3, Int64(version.dot.counter))
                bind.int(4, Int64(clamping: version.timestamp.rawValue))
                bind.text(5, version.write.json.text)
            }
        }
        let keep = FieldHistory.rowsKept(limit: historyLimit, new: new)
        guard keep > 0 else {
            try statement(.clearHistory).run { bind in bind.int(1, fieldRow) }
            return
        }
        try statement(.trimHistory).run { bind in
            bind.int(1, fieldRow)
            bind.int(2, keep - 1)
        }
    }

    /// Updates an item's derived columns from its in-memory state.
    mutating func updateItem(row: Int64, from state: ItemState) throws {
        try statement(.updateItem).run { bind in
            bind.text(1, state.type)
            bind.bool(2, state.isDeleted)
            bind.int(3, state.conflictCount)
            bind.int(4, row)
        }
    }

    /// Applies a ``DerivedChange`` to an item's row: one statement, no read.
    func updateItem(row: Int64, by change: DerivedChange) throws {
        guard !change.isEmpty else { return }
        try db.cachedStatement(
            sql: """
                UPDATE item SET conflicts = conflicts + ?, type = coalesce(?, type), deleted = coalesce(?, deleted)
                WHERE id = ?
                """
        ).execute(arguments: [change.conflicts, change.type, change.deleted, row])
    }
}

extension FieldVersion.Write {
    /// Reads the `history` table's `write` column (``json``); nil if it is not such a write.
    init?(historyText text: String) {
        guard let json = try? JSON(parsing: text) else { return nil }
        self.init(json: json)
    }
}

/// The statements a ``Transaction`` runs for every item and field it writes.
enum HotStatement: Int, CaseIterable {
    case findItem, findItemAndCollection, insertItem, insertBareItem, updateItem, insertField, updateField
    case insertVersion, deleteVersion
    case loadField, insertHistory, trimHistory, clearHistory

    var sql: String {
        switch self {
        case .findItem: "SELECT id FROM item WHERE item_id = ?"
        case .findItemAndCollection: "SELECT id, collected FROM item WHERE item_id = ?"
        case .insertItem: "INSERT INTO item(item_id, type, deleted, conflicts) VALUES (?, ?, ?, ?)"
        case .insertBareItem: "INSERT INTO item(item_id, type) VALUES (?, ?)"
        case .updateItem: "UPDATE item SET type = ?, deleted = ?, conflicts = ? WHERE id = ?"
        case .insertField:
            "INSERT INTO field(id, name, conflict, state, seq, changed_at, change_kind) VALUES (?, ?, ?, ?, ?, ?, ?)"
        case .updateField:
            "UPDATE field SET conflict = ?, state = ?, seq = ?, changed_at = ?, change_kind = ? WHERE id = ?"
        case .insertVersion: "INSERT OR IGNORE INTO version(node, counter, field) VALUES (?, ?, ?)"
        case .deleteVersion: "DELETE FROM version WHERE node = ? AND counter = ? AND field = ?"
        case .loadField: "SELECT id, state FROM field WHERE id BETWEEN ? AND ? AND name = ?"
        case .insertHistory:
            "INSERT OR IGNORE INTO history(field, node, counter, timestamp, write) VALUES (?, ?, ?, ?, ?)"
        case .trimHistory:
            "DELETE FROM history WHERE field = ?1 AND seq < (SELECT seq FROM history WHERE field = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)"
        case .clearHistory: "DELETE FROM history WHERE field = ?"
        }
    }
}

// The witness rule (``WriterWitnessing/retireWriterIfWitnessed(by:batch:)``) is written once, in
// LansyncReplica; these are its steps in this store's SQL.
extension Transaction: WriterWitnessing {
    func currentWriterID() throws -> NodeID { try Self.currentWriter(db: db) }

    mutating func heldCounter(of writer: NodeID) throws -> UInt64 { try counter(of: try nodeRow(writer)) }

    func retireCurrentWriter() throws {
        try db.execute(
            sql:
                "INSERT INTO meta(key, value) VALUES ('writer_retired', '1') ON CONFLICT(key) DO UPDATE SET value = '1'"
        )
    }
}
