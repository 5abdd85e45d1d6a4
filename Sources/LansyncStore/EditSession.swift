public import LansyncCore
import LansyncReplica

/// Local edits inside one open transaction (``ReplicaStore/applyEdits(wallMilliseconds:_:)``):
/// each ``apply(_:to:)`` issues the next dot, asks the merge core to apply the edit, and writes
/// the changed fields at once (``LocalEdits``, the same in every store). Reads see the
/// transaction's own writes.
public struct EditSession {
    var rows: SQLiteRows
    private var edits: LocalEdits<SQLiteRows>

    init(rows: SQLiteRows, writer: ClaimedWriter, wallMilliseconds: UInt64) {
        self.rows = rows
        edits = LocalEdits(writer: writer, wallMilliseconds: wallMilliseconds)
    }

    /// The writer's counter after the last edit.
    var counter: UInt64 { edits.counter }
    /// How many edits were applied.
    public var count: Int { edits.count }
    /// The first edit's dot.
    public var first: Dot? { edits.first }

    /// The item as this transaction leaves it so far (an empty state if it does not exist).
    public mutating func itemState(_ id: ItemID) throws -> ItemState { try edits.itemState(id, in: &rows) }

    /// Applies one edit; returns its dot. Throws ``StoreError/edit(_:index:)`` (index: how many
    /// edits came before it) if the merge core refuses it; the caller then ends the transaction.
    @discardableResult
    public mutating func apply(_ edit: ItemEdit, to id: ItemID) throws -> Dot {
        try edits.apply(edit, to: id, in: &rows)
    }

    /// Signs the edits' runs and keeps them, before the transaction commits.
    mutating func finish() throws { try edits.finish(in: &rows) }
}
