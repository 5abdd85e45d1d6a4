import GRDB
import LansyncCore
import LansyncReplica

/// One peer batch merged into one write transaction (``ReplicaStore/receive(_:from:incarnation:wallMilliseconds:refuse:revoked:writers:allowance:)``):
/// each field state merged with what the replica holds; refused (a limit's reason) or overruled
/// (a revoked node's writes) by a write of this replica's own where it must be; saved; and each
/// item's derived columns brought up to date once, at the end, without reading the item again.
///
/// A batch carries an item's fields together, so each item is looked up once, and the fields of
/// the item it has just created are not read (they cannot exist yet).
struct BatchMerge {
    let refuse: ReplicaStore.Refusal?
    let revoked: RevokedWriters
    let lease: WriterLease
    /// This replica's name, for a writer claimed to overrule.
    let nodeName: String
    let wallMilliseconds: UInt64
    /// This replica's writer, claimed by the first overrule.
    private(set) var writer: Transaction.ClaimedWriter?
    /// How many fields (and items deleted) the batch changed.
    private(set) var changed = 0
    private var itemRows: [ItemID: Int64] = [:]
    /// The item of the last change merged: a batch carries an item's fields together, so most
    /// changes find their item here, with no id hashed.
    private var lastItem: (id: ItemID, row: Int64)?
    /// Items of this batch reduced to their minimal tombstone (Docs/MERGE.md, "Causal stability
    /// and collection"): they take in only writes this replica has not seen.
    private var collectedItems = Set<Int64>()
    /// The replica's version vector as the batch began, read once the batch meets an item the
    /// replica does not hold.
    private var seen: VersionVector?
    /// Each item's user fields, counted once per batch when a limit asks (a new item has none):
    /// the field-count limit costs no query per field.
    private var userFields: [Int64: Int] = [:]
    /// The item this batch created last, and the fields saved in it so far: a field of it not
    /// among them cannot exist yet, and is not read. (A field of an item created earlier in the
    /// batch is read: a batch carries an item's fields together, so that is rare.)
    private var lastCreated: (row: Int64, saved: [FieldName])?
    private var derived: [Int64: Transaction.DerivedChange] = [:]
    private var createdByRevoked: [(row: Int64, id: ItemID)] = []

    init(
        refuse: ReplicaStore.Refusal?,
        revoked: RevokedWriters,
        lease: WriterLease,
        nodeName: String,
        wallMilliseconds: UInt64
    ) {
        self.refuse = refuse
        self.revoked = revoked
        self.lease = lease
        self.nodeName = nodeName
        self.wallMilliseconds = wallMilliseconds
    }

    /// Merges one field's change.
    mutating func merge(_ update: FieldUpdate, in tx: inout Transaction) throws {
        for version in update.change.versions {
            tx.clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
        }
        guard let itemRow = try row(of: update, in: &tx) else { return }
        if collectedItems.contains(itemRow) {
            let seen = try tx.versionVector(of: Array(Set(update.change.context.nodes)))
            guard update.change.isNews(to: seen) else { return }
            // A write made since (a late concurrent edit, a restore, another delete): the item
            // holds more than its tombstone again, and a later round judges it afresh. (A restore
            // left marked collected would be purged while live.)
            try tx.db.execute(sql: "UPDATE item SET collected = 0 WHERE id = ?", arguments: [itemRow])
            collectedItems.remove(itemRow)
        }
        let inLastCreated = lastCreated?.row == itemRow
        let old =
            inLastCreated && lastCreated?.saved.contains(update.key.field) == false
            ? nil : try tx.loadField(item: itemRow, name: update.key.field)
        var merged = (old?.state ?? FieldState()).merged(with: update.change)
        guard merged != old?.state else { return }
        let overruled = try judge(update, merged: &merged, old: old, itemRow: itemRow, in: &tx)
        _ = try tx.saveField(
            item: itemRow,
            itemID: update.key.item,
            name: update.key.field,
            row: old?.row,
            old: old?.state,
            new: merged,
            overruled: overruled
        )
        if inLastCreated, old == nil { lastCreated?.saved.append(update.key.field) }
        if old == nil, !update.key.field.isReserved, let count = userFields[itemRow] {
            userFields[itemRow] = count + 1
        }
        derived[itemRow, default: Transaction.DerivedChange()].note(update.key.field, old: old?.state, new: merged)
        changed += 1
    }

    /// The item's row, inserted if the replica does not hold it; nil if it does not because it
    /// purged it: the change brings only writes the replica has seen (Docs/MERGE.md, "Causal
    /// stability and collection"), which must not bring the item back.
    private mutating func row(of update: FieldUpdate, in tx: inout Transaction) throws -> Int64? {
        let item = update.key.item
        if let lastItem, lastItem.id == item { return lastItem.row }
        if let known = itemRows[item] {
            lastItem = (item, known)
            return known
        }
        let row: Int64
        if let stored = try tx.itemRowAndCollection(item) {
            row = stored.row
            if stored.collected { collectedItems.insert(row) }
        } else {
            if seen == nil { seen = try ReplicaStore.versionVector(db: tx.db) }
            guard let seen, update.change.isNews(to: seen) else { return nil }
            row = try tx.insertItem(item)
            lastCreated = (row, [])
            userFields[row] = 0
        }
        itemRows[item] = row
        lastItem = (item, row)
        return row
    }

    /// Overrules in `merged` what a limit refuses or a revocation does; returns the versions a
    /// revocation overruled (for history).
    private mutating func judge(
        _ update: FieldUpdate,
        merged: inout FieldState,
        old: (row: Int64, state: FieldState)?,
        itemRow: Int64,
        in tx: inout Transaction
    ) throws -> [FieldVersion] {
        if let refuse {
            let db = tx.db
            let reason = try refuse(update.key, merged, old?.state) {
                if let known = userFields[itemRow] { return known }
                let count = try Transaction.userFieldCount(db: db, item: itemRow)
                userFields[itemRow] = count
                return count
            }
            if let reason {
                let timestamp = tx.clock.tick(wallMilliseconds: wallMilliseconds)
                let dot = try tx.nextDot(&writer, lease: lease, name: nodeName)
                PeerOverrule.refuse(
                    update.change,
                    in: &merged,
                    old: old?.state,
                    reason: reason,
                    dot: dot,
                    timestamp: timestamp
                )
                return []
            }
        }
        guard !revoked.isEmpty else { return [] }
        switch try tx.overruleRevoked(
            &merged,
            old: old?.state,
            field: update.key.field,
            fieldRow: old?.row,
            revoked: revoked,
            writer: &writer,
            lease: lease,
            name: nodeName,
            wallMilliseconds: wallMilliseconds
        ) {
        case .none: return []
        case .overruled(let versions): return versions
        case .createdByRevoked:
            createdByRevoked.append((itemRow, update.key.item))
            return []
        }
    }

    /// Brings the items' derived columns up to date, deletes the items a revoked node created,
    /// and sets the overruling writer's counter.
    mutating func finish(_ tx: inout Transaction) throws {
        for (row, change) in derived { try tx.updateItem(row: row, by: change) }
        // After the derived columns, which a `_deleted` in this batch may have set.
        changed += try tx.deleteItems(
            createdByRevoked: createdByRevoked,
            revoked: revoked,
            writer: &writer,
            lease: lease,
            name: nodeName,
            wallMilliseconds: wallMilliseconds
        )
        if let writer { try tx.setCounter(of: writer.row, to: writer.counter) }
    }
}
