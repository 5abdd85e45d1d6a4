import Foundation
import GRDB
import LansyncCore
import LansyncReplica

/// Assembles ``StoredItem``s from the rows of an item-and-fields statement, sorted by item id:
/// one row per field (or one with no field for an item that has none). An item is complete when
/// the next item's first row arrives, or at the end (``finish()``).
///
/// A field state that does not decode is damage: reported, never shown.
struct StoredItemReader {
    let path: String
    /// This replica's writers, when each item's ``StoredItem/localEdit`` is wanted (the rows then
    /// include the reserved fields', whose versions are edits too).
    let localWriters: Set<NodeID>?
    let nodes: NodeRows
    private var current: (id: ItemID, type: String, deleted: Bool)?
    private var fields: [(name: FieldName, value: Value)] = []
    private var conflicts: [FieldName] = []
    private var latest = VersionVector()

    init(path: String, localWriters: Set<NodeID>?, nodes: NodeRows) {
        self.path = path
        self.localWriters = localWriters
        self.nodes = nodes
    }

    /// Takes one row (`item_id, type, deleted, name, state, conflict`); returns the item before it
    /// when this row starts another.
    mutating func read(_ row: Row, db: Database) throws -> StoredItem? {
        let id = ItemID(unchecked: try row.decode(atIndex: 0) as String)
        var done: StoredItem?
        if current?.id != id {
            done = finish()
            current = (id, (try row.decode(atIndex: 1)), (try row.decode(atIndex: 2)))
        }
        guard let name: String = (try row.decode(atIndex: 3)) else { return done }
        // Reserved fields are not shown, but a conflict on one (`_type`) is.
        let shown = !name.hasPrefix("_")
        if shown || localWriters != nil {
            guard let blob: Data = try? row.decode(atIndex: 4),
                let state = try? StoredState.decode(Array(blob), db: db, nodes: nodes)
            else {
                throw StoreError.corrupt(path: path, detail: "the state of \(id).\(name) does not decode")
            }
            // A field whose shown version removed it is not shown (its state stays, to merge).
            if shown, let value = state.shownValue { fields.append((FieldName(unchecked: name), value)) }
            if let localWriters {
                for version in state.versions where localWriters.contains(version.dot.node) {
                    latest.raise(version.dot.node, to: version.dot.counter)
                }
            }
        }
        if name != FieldName.deleted.rawValue, try row.decode(atIndex: 5) as Bool {
            conflicts.append(FieldName(unchecked: name))
        }
        return done
    }

    /// The item the last rows made, if any; the reader is empty after.
    mutating func finish() -> StoredItem? {
        defer {
            current = nil
            fields = []
            conflicts = []
            latest = VersionVector()
        }
        guard let current else { return nil }
        var item = StoredItem(
            id: current.id,
            type: current.type,
            deleted: current.deleted,
            fields: fields,
            conflicts: conflicts
        )
        if localWriters != nil, !latest.isEmpty { item.localEdit = latest }
        return item
    }
}
