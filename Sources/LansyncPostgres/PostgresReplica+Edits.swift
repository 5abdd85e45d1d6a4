public import LansyncCore
import LansyncJSON
public import LansyncReplica
import PostgresNIO

// Local edits: each one transaction, with its own dot, the merge core deciding every state.
extension PostgresReplica {
    /// Performs one local edit in one transaction; returns its dot.
    @discardableResult
    public func apply(_ edit: ItemEdit, to id: ItemID, wallMilliseconds: UInt64) throws(StoreError) -> Dot {
        try guarded {
            try database.transaction(write: true) { db in
                if let why = try Self.readOnlyReason(db) { throw StoreError.readOnly(why: why) }
                var rows = PostgresRows(tx: try PostgresWrite(db, origin: .local), signer: signing.current)
                let writer = try rows.claimWriter()
                var edits = LocalEdits<PostgresRows>(writer: writer, wallMilliseconds: wallMilliseconds)
                let dot = try edits.apply(edit, to: id, in: &rows)
                try edits.finish(in: &rows)
                try rows.setCounter(of: writer.row, to: dot.counter)
                try rows.tx.finish()
                return dot
            }
        }
    }
}

/// One write transaction on a PostgreSQL replica: the statements that keep the version index,
/// history, rejections, the change feed and the items' derived columns in step with the field
/// states, as the SQLite store's `Transaction` does (not yet: the query index, links and search
/// texts, which only the local API reads).
///
/// It starts by taking the replica's write lock (a transaction-level advisory lock): one writer
/// at a time across every process, so the feed's numbers and the change stamp are given in
/// commit order (and, as every connection of the replica, commits with `synchronous_commit =
/// on`). Then it checks that the server is the one the writer started on
/// (``PostgresReplica/serverIncarnation(_:)``); if not, the database may have lost commits, and
/// the writer, the feed's numbers and the change stamp all move past anything those gave.
struct PostgresWrite {
    let db: BlockingPostgres.Statements
    let origin: ChangeOrigin
    let historyLimit: Int
    var clock: HybridLogicalClock
    private var nodeRows: [NodeID: Int64] = [:]
    /// The change stamp this transaction commits with (meta `changes` + 1).
    private var stamp: Int64
    /// The feed's last number, and this commit's wall-clock time, read at the first change.
    private var feed: (last: Int64, at: Int64)?
    private var changedFields = false
    /// Whether the version vector moved (a stream completed) without a field saved.
    private var countersRaised = false

    init(_ db: BlockingPostgres.Statements, origin: ChangeOrigin) throws {
        self.db = db
        self.origin = origin
        try db.run("SELECT pg_advisory_xact_lock(7421, hashtext(current_schema()))")
        var meta: [String: String] = [:]
        for row in try db.run(
            """
            SELECT key, value FROM meta
            WHERE key IN ('clock', 'history_limit', 'changes', 'writer_server', 'node_id', 'node_name')
            UNION ALL SELECT 'server', \(unescaped: PostgresReplica.incarnationSQL)
            """
        ) {
            let (key, value) = try row.decode((String, String).self)
            meta[key] = value
        }
        clock = HybridLogicalClock(latest: HLCTimestamp(rawValue: meta["clock"].flatMap(UInt64.init) ?? 0))
        historyLimit = meta["history_limit"].flatMap(Int.init) ?? ReplicaConstants.defaultHistoryLimit
        stamp = (meta["changes"].flatMap(Int64.init) ?? 0) + 1
        if meta["writer_server"] != meta["server"] { try moveOnFromAnotherServer(meta) }
    }

    /// The server is not the one the writer started on: a restart, a restore, a standby promoted
    /// behind its primary. What the database lost may have given dots, feed numbers and change
    /// stamps: a new writer, and both numberings jump to a floor no lost commit reached.
    private mutating func moveOnFromAnotherServer(_ meta: [String: String]) throws {
        guard let node = meta["node_id"].flatMap(NodeID.init(text:)) else {
            throw PostgresReplica.damaged("the node id in table meta is missing")
        }
        let floor = Int64(clamping: ReplicaConstants.changeSequenceFloor)
        try PostgresReplica.raiseMeta("change_floor", to: floor, db)
        try PostgresReplica.raiseMeta("changes", to: floor, db)
        stamp = max(stamp, floor + 1)
        try startWriter(NodeID.writer(for: node), name: meta["node_name"], reason: .unproven)
    }

    mutating func nodeRow(_ id: NodeID) throws -> Int64 {
        if let row = nodeRows[id] { return row }
        // Looked up first: an insert that finds the row still uses up a number of the sequence.
        if let row = try db.value("SELECT id FROM node WHERE node_id = \(id.text)", as: Int64.self) {
            nodeRows[id] = row
            return row
        }
        guard
            let row = try db.value("INSERT INTO node (node_id) VALUES (\(id.text)) RETURNING id", as: Int64.self)
        else { throw PostgresReplica.damaged("node \(id.text) has no row") }
        nodeRows[id] = row
        return row
    }

    func setCounter(of row: Int64, to counter: UInt64) throws {
        try db.run("UPDATE node SET counter = \(bigint: counter) WHERE id = \(row)")
    }

    mutating func loadItem(_ id: ItemID) throws -> LoadedItem {
        guard let found = try db.run("SELECT id, collected FROM item WHERE item_id = \(id.rawValue)").first else {
            return LoadedItem(row: nil, state: ItemState(id: id), fieldRows: [:])
        }
        let (row, collected) = try found.decode((Int64, Int64).self)
        var item = try PostgresReplica.loadItem(db, id, row: row)
        item.collected = collected != 0
        return item
    }

    /// Writes the item's derived columns (inserting its row if it is new); its row.
    func saveItem(_ id: ItemID, row: Int64?, state: ItemState) throws -> Int64 {
        if let row {
            try db.run(
                """
                UPDATE item SET type = \(state.type), deleted = \(state.isDeleted), conflicts = \(state.conflictCount)
                WHERE id = \(row)
                """
            )
            return row
        }
        guard
            let row = try db.value(
                """
                INSERT INTO item (item_id, type, deleted, conflicts)
                VALUES (\(id.rawValue), \(state.type), \(state.isDeleted), \(state.conflictCount)) RETURNING id
                """,
                as: Int64.self
            )
        else { throw PostgresReplica.damaged("an item's insert returned no row") }
        return row
    }

    /// Writes a field's new state, and brings the version index, history and feed in step.
    mutating func saveField(_ save: FieldSave) throws -> Int64 {
        let (item, itemID, name, row, old, new) = (save.item, save.itemID, save.name, save.row, save.old, save.new)
        changedFields = true
        // Every node the state names gets its row: that is what makes a writer known to the
        // next batch's check (WriterCheck), as in the SQLite store.
        for node in new.namedNodes { _ = try nodeRow(node) }
        let conflict = name != .deleted && new.hasConflict
        let kind = ChangeKind.of(name, old: old, new: new, conflict: conflict, origin: origin)
        let seq = try nextSeq()
        let state = ByteBuffer(bytes: new.encoded)
        let fieldRow: Int64
        if let row {
            try db.run(
                """
                UPDATE field SET conflict = \(conflict), state = \(state), seq = \(seq.number),
                    changed_at = \(seq.at), change_kind = \(Int16(kind.rawValue))
                WHERE id = \(row)
                """
            )
            fieldRow = row
        } else {
            guard
                let inserted = try db.value(
                    """
                    INSERT INTO field (item, name, conflict, state, seq, changed_at, change_kind)
                    VALUES (\(item), \(name.rawValue), \(conflict), \(state), \(seq.number), \(seq.at), \(Int16(kind.rawValue)))
                    RETURNING id
                    """,
                    as: Int64.self
                )
            else { throw PostgresReplica.damaged("a field's insert returned no row") }
            fieldRow = inserted
        }
        let oldDots = old?.versions.map(\.dot) ?? []
        let newDots = new.versions.map(\.dot)
        try indexVersions(of: new, field: fieldRow, oldDots: oldDots, newDots: newDots, item: itemID, name: name)
        try recordHistory(field: fieldRow, old: old, new: new, newDots: newDots, overruled: save.overruled)
        return fieldRow
    }

    /// Raises each node's counter in the version vector to `covers`' where that is higher.
    mutating func raiseCounters(to covers: VersionVector) throws {
        for (node, counter) in covers.counters {
            let row = try nodeRow(node)
            try db.run("UPDATE node SET counter = greatest(counter, \(bigint: counter)) WHERE id = \(row)")
        }
        if !covers.counters.isEmpty { countersRaised = true }
    }

    /// The transaction changed what the replica holds without saving a field (a collection
    /// round): the change stamp moves, so caches keyed on it read again.
    mutating func noteChange() { changedFields = true }

    /// The feed's next number and this commit's time.
    private mutating func nextSeq() throws -> (number: Int64, at: Int64) {
        if feed == nil {
            let highest = try db.value("SELECT coalesce(max(seq), 0) FROM field", as: Int64.self) ?? 0
            // The floor collection (feed_floor) or, in the SQLite store, a restore or repair
            // (change_floor) put the numbering above.
            let floor =
                try db.run("SELECT value FROM meta WHERE key IN ('change_floor', 'feed_floor')")
                .compactMap { Int64(try $0.decode(String.self)) }.max() ?? 0
            feed = (max(highest, floor), Int64(clamping: WallClock.milliseconds))
        }
        feed!.last += 1
        return (feed!.last, feed!.at)
    }

    private mutating func indexVersions(
        of new: FieldState,
        field: Int64,
        oldDots: [Dot],
        newDots: [Dot],
        item: ItemID,
        name: FieldName
    ) throws {
        let superseded = oldDots.filter { !newDots.contains($0) }
        for dot in superseded {
            let node = try nodeRow(dot.node)
            try db.run(
                "DELETE FROM version WHERE node = \(node) AND counter = \(bigint: dot.counter) AND field = \(field)"
            )
        }
        if !superseded.isEmpty {
            // A stream that has not reached the removed rows yet finds the field by this stamp.
            try db.run("UPDATE field SET superseded_at = \(stamp) WHERE id = \(field)")
        }
        for version in new.versions where !oldDots.contains(version.dot) {
            let node = try nodeRow(version.dot.node)
            try db.run(
                """
                INSERT INTO version (node, counter, field) VALUES (\(node), \(bigint: version.dot.counter), \(field))
                ON CONFLICT DO NOTHING
                """
            )
            if case let .overrule(_, rejected, reason) = version.write {
                for dot in rejected {
                    try db.run(
                        """
                        INSERT INTO rejection (node_id, counter, item_id, field, reason)
                        VALUES (\(dot.node.text), \(bigint: dot.counter), \(item.rawValue), \(name.rawValue), \(reason))
                        ON CONFLICT DO NOTHING
                        """
                    )
                }
            }
        }
    }

    private mutating func recordHistory(
        field: Int64,
        old: FieldState?,
        new: FieldState,
        newDots: [Dot],
        overruled: [FieldVersion]
    ) throws {
        let recorded = FieldHistory.recorded(old: old, new: new, newDots: newDots, overruled: overruled)
        guard !recorded.isEmpty else { return }
        for version in recorded {
            let node = try nodeRow(version.dot.node)
            try db.run(
                """
                INSERT INTO history (field, node, counter, timestamp, write)
                VALUES (\(field), \(node), \(bigint: version.dot.counter), \(bigint: version.timestamp.rawValue),
                    \(version.write.json.text))
                ON CONFLICT DO NOTHING
                """
            )
        }
        let keep = FieldHistory.rowsKept(limit: historyLimit, new: new)
        guard keep > 0 else {
            try db.run("DELETE FROM history WHERE field = \(field)")
            return
        }
        try db.run(
            """
            DELETE FROM history WHERE field = \(field) AND seq < (
                SELECT seq FROM history WHERE field = \(field) ORDER BY seq DESC LIMIT 1 OFFSET \(keep - 1))
            """
        )
    }

    /// Ends the transaction's bookkeeping: the clock, the change stamp if a field changed, and
    /// (if what the replica holds changed) a notification to the other processes on the replica,
    /// delivered at the commit (``PostgresReplica/commitsElsewhere()``).
    func finish() throws {
        try db.run("UPDATE meta SET value = \(String(clock.latest.rawValue)) WHERE key = 'clock'")
        if changedFields {
            try db.run("UPDATE meta SET value = \(String(stamp)) WHERE key = 'changes'")
        }
        if changedFields || countersRaised {
            try db.run("SELECT pg_notify(current_schema(), current_setting('lansync.tag', true))")
        }
    }
}
