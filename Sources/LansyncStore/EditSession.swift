public import LansyncCore
import LansyncReplica

/// Local edits inside one open transaction (``ReplicaStore/applyEdits(wallMilliseconds:_:)``):
/// each ``apply(_:to:)`` issues the next dot, asks the merge core to apply the edit, and writes
/// the changed fields at once. Reads see the transaction's own writes.
public struct EditSession {
    var tx: Transaction
    let writer: Transaction.ClaimedWriter
    let wallMilliseconds: UInt64
    /// The writer's counter after the last edit.
    private(set) var counter: UInt64
    /// How many edits were applied, and the first one's dot.
    public private(set) var count = 0
    public private(set) var first: Dot?
    /// The item of the last edit: consecutive edits of one item (an import's line) load it once.
    private var recent: (id: ItemID, item: LoadedItem)?

    init(tx: Transaction, writer: Transaction.ClaimedWriter, wallMilliseconds: UInt64) {
        self.tx = tx
        self.writer = writer
        self.wallMilliseconds = wallMilliseconds
        counter = writer.counter
    }

    /// The item as this transaction leaves it so far (an empty state if it does not exist).
    public mutating func itemState(_ id: ItemID) throws -> ItemState {
        try load(id).state
    }

    private mutating func load(_ id: ItemID) throws -> LoadedItem {
        if let recent, recent.id == id { return recent.item }
        let item = try tx.loadItem(id)
        recent = (id, item)
        return item
    }

    /// Applies one edit; returns its dot. Throws ``StoreError/edit(_:index:)`` (index: how many
    /// edits came before it) if the merge core refuses it; the caller then ends the transaction.
    @discardableResult
    public mutating func apply(_ edit: ItemEdit, to id: ItemID) throws -> Dot {
        let timestamp = tx.clock.tick(wallMilliseconds: wallMilliseconds)
        let dot = Dot(node: writer.id, counter: counter + 1)
        var item = try load(id)
        let before = item.state
        let changed: [FieldName: FieldState]
        // Only a restore asks how long the trash keeps a deleted item.
        let trashWindow = edit == .restore ? try ReplicaStore.collectionSettings(db: tx.db).trashWindow : nil
        do {
            changed = try item.state.apply(edit, dot: dot, timestamp: timestamp, trashWindow: trashWindow)
        } catch {
            throw StoreError.edit(error, index: count)
        }
        let itemRow: Int64
        if let row = item.row {
            itemRow = row
            try tx.updateItem(row: itemRow, from: item.state)
        } else {
            itemRow = try tx.insertItem(id, from: item.state)
            item.row = itemRow
            // Room for every field at once (an import's line sets them all; growing the table
            // one field at a time rehashed it three or four times per item).
            item.fieldRows.reserveCapacity(changed.count)
        }
        // In name order (a new item's fields take rows in that order). The names alone are
        // sorted: sorting (name, state) pairs moved each field state, retained and released, and
        // took 3.5% of an import.
        for name in changed.keys.sorted() {
            guard let state = changed[name] else { continue }
            item.fieldRows[name] = try tx.saveField(
                item: itemRow,
                itemID: id,
                name: name,
                row: item.fieldRows[name],
                old: before.fields[name],
                new: state
            )
        }
        recent = (id, item)
        counter += 1
        count += 1
        if first == nil { first = dot }
        return dot
    }
}
