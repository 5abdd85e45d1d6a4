package import LansyncCore

/// An item as a write transaction loaded it: its row (nil if the replica does not hold it), its
/// state, its fields' rows, and whether collection reduced it to its tombstone.
package struct LoadedItem: Sendable {
    package var row: Int64?
    package var state: ItemState
    package var fieldRows: [FieldName: Int64]
    package var collected: Bool

    package init(row: Int64?, state: ItemState, fieldRows: [FieldName: Int64], collected: Bool = false) {
        self.row = row
        self.state = state
        self.fieldRows = fieldRows
        self.collected = collected
    }
}

/// What local edits ask of a store in one of its write transactions (``LocalEdits``): an item
/// whole, its derived columns, the trash window a restore is judged by.
package protocol EditRows: FieldRows {
    /// Item `id` with its fields (a new, empty item if the replica does not hold it).
    mutating func loadItem(_ id: ItemID) throws -> LoadedItem
    /// Writes the item's derived columns from `state`, inserting its row when `row` is nil; the row.
    mutating func saveItem(_ id: ItemID, row: Int64?, state: ItemState) throws -> Int64
    /// How long the trash keeps a deleted item (``CollectionSettings/trashWindow``).
    mutating func trashWindow() throws -> UInt64
}

/// Local edits in one write transaction, the same way in every store: each ``apply(_:to:in:)``
/// issues the writer's next dot, has the merge core apply the edit to the item, and writes the
/// item's derived columns and every changed field at once. Reads see the transaction's own writes.
package struct LocalEdits<Rows: EditRows> {
    package let writer: ClaimedWriter
    package let wallMilliseconds: UInt64
    /// The writer's counter after the last edit.
    package private(set) var counter: UInt64
    /// How many edits were applied, and the first one's dot.
    package private(set) var count = 0
    package private(set) var first: Dot?
    /// The leaves of the edits' dots, signed when the transaction commits (``finish(in:)``).
    private var runs = RunLog(ordered: true)
    /// The item of the last edit: consecutive edits of one item (an import's line) load it once.
    private var recent: (id: ItemID, item: LoadedItem)?

    package init(writer: ClaimedWriter, wallMilliseconds: UInt64) {
        self.writer = writer
        self.wallMilliseconds = wallMilliseconds
        counter = writer.counter
    }

    /// The item as this transaction leaves it so far (an empty state if it does not exist).
    package mutating func itemState(_ id: ItemID, in rows: inout Rows) throws -> ItemState {
        try load(id, in: &rows).state
    }

    private mutating func load(_ id: ItemID, in rows: inout Rows) throws -> LoadedItem {
        if let recent, recent.id == id { return recent.item }
        let item = try rows.loadItem(id)
        recent = (id, item)
        return item
    }

    /// Applies one edit; returns its dot. Throws ``StoreError/edit(_:index:)`` (index: how many
    /// edits came before it) if the merge core refuses it; the caller then ends the transaction.
    package mutating func apply(_ edit: ItemEdit, to id: ItemID, in rows: inout Rows) throws -> Dot {
        let timestamp = rows.clock.tick(wallMilliseconds: wallMilliseconds)
        let dot = Dot(node: writer.id, counter: counter + 1)
        var item = try load(id, in: &rows)
        let before = item.state
        let changed: [FieldName: FieldState]
        // Only a restore asks how long the trash keeps a deleted item.
        let trashWindow = edit == .restore ? try rows.trashWindow() : nil
        do {
            changed = try item.state.apply(edit, dot: dot, timestamp: timestamp, trashWindow: trashWindow)
        } catch {
            throw StoreError.edit(error, index: count)
        }
        if item.row == nil {
            // Room for every field at once (an import's line sets them all; growing the table
            // one field at a time rehashed it three or four times per item).
            item.fieldRows.reserveCapacity(changed.count)
        }
        let itemRow = try rows.saveItem(id, row: item.row, state: item.state)
        item.row = itemRow
        // In name order (a new item's fields take rows in that order). The names alone are
        // sorted: sorting (name, state) pairs moved each field state, retained and released, and
        // took 3.5% of an import.
        for name in changed.keys.sorted() {
            guard let state = changed[name] else { continue }
            runs.note(dot, item: id, field: name, in: state)
            item.fieldRows[name] = try rows.save(
                FieldSave(
                    item: itemRow,
                    itemID: id,
                    name: name,
                    row: item.fieldRows[name],
                    old: before.fields[name],
                    new: state
                )
            )
        }
        recent = (id, item)
        counter += 1
        count += 1
        if first == nil { first = dot }
        return dot
    }

    /// Ends the edits in the transaction: signs their runs and keeps them.
    package mutating func finish(in rows: inout Rows) throws {
        try rows.sign(runs)
        runs = RunLog(ordered: true)
    }
}
