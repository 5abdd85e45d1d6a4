import LansyncCore
import LansyncStore
import PostgresNIO

// A peer's batches, merged in one transaction each through the merge core.
extension PostgresReplica {
    /// Merges a batch outside any stream (what it covers joins the version vector at once) in
    /// one transaction; how many fields changed. Applying it again changes nothing.
    ///
    /// Internal while the checks a member's batch must pass before it is stored are still to be
    /// ported (the writer bounds, a relay's limits, revocations, collected items, a rollback a
    /// batch witnesses): no peer's input reaches it yet.
    @discardableResult
    func apply(_ batch: DeltaBatch, wallMilliseconds: UInt64) throws(StoreError) -> Int {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .peer)
                var merge = PostgresBatchMerge(wallMilliseconds: wallMilliseconds)
                if let base = batch.base, !base.isEmpty {
                    let held = try merge.seen(in: &tx)
                    guard batch.isApplicable(to: held) else { throw StoreError.staleDelta(base: base, held: held) }
                }
                for update in batch.updates { try merge.merge(update, in: &tx) }
                try merge.finish(&tx)
                try tx.raiseCounters(to: batch.covers)
                try tx.finish()
                return merge.changed
            }
        }
    }
}

/// One peer batch merged into one write transaction: each field state merged with what the
/// replica holds, saved, and each item's derived columns written once at the end from its
/// state in memory (an item is loaded once per batch).
struct PostgresBatchMerge {
    let wallMilliseconds: UInt64
    private(set) var changed = 0
    private var items: [ItemID: LoadedFields] = [:]
    /// The items the batch changed, in the order it first changed them.
    private var touched: [ItemID] = []
    private var touchedSet = Set<ItemID>()
    /// The version vector as the batch began, read when first needed.
    private var vector: VersionVector?

    init(wallMilliseconds: UInt64) { self.wallMilliseconds = wallMilliseconds }

    mutating func seen(in tx: inout PostgresWrite) throws -> VersionVector {
        if let vector { return vector }
        let read = try PostgresReplica.versionVector(tx.db)
        vector = read
        return read
    }

    /// Merges one field's change.
    mutating func merge(_ update: FieldUpdate, in tx: inout PostgresWrite) throws {
        for version in update.change.versions {
            tx.clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
        }
        let id = update.key.item
        var item = try items[id] ?? tx.loadItem(id)
        // An item the replica does not hold comes only with a write it has not seen.
        if item.row == nil, !update.change.isNews(to: try seen(in: &tx)) { return }
        let old = item.state.fields[update.key.field]
        let merged = (old ?? FieldState()).merged(with: update.change)
        guard merged != old else { return }
        if item.row == nil { item.row = try tx.saveItem(id, row: nil, state: ItemState(id: id)) }
        if touchedSet.insert(id).inserted { touched.append(id) }
        item.fieldRows[update.key.field] = try tx.saveField(
            item: item.row!,
            itemID: id,
            name: update.key.field,
            row: item.fieldRows[update.key.field],
            old: old,
            new: merged
        )
        item.state.merge(update.key.field, merged)
        items[id] = item
        changed += 1
    }

    /// Writes the derived columns of every item the batch changed.
    func finish(_ tx: inout PostgresWrite) throws {
        for id in touched {
            guard let item = items[id], let row = item.row else { continue }
            _ = try tx.saveItem(id, row: row, state: item.state)
        }
    }
}
