import GRDB
import LansyncReplica

/// How the rows of table `field` are numbered (since v20): a field's row id is its item's row id
/// times ``perItem`` plus the field's place among its item's fields. An item's fields are then one
/// range of the table's own key, so finding them, or one of them by name, needs no second index
/// (the `(item, name)` index this replaced was a sixth of the file), they sit side by side on
/// disk, and `field.item` is computed from the row id rather than stored.
///
/// An item's field rows only go when it is collected, and every node refuses a field past
/// ``LansyncCore/Limits/maxFieldsPerItem`` user fields (local edits and what peers send alike);
/// but a refused field keeps a row (the overrule that refuses it), so an item that several
/// replicas filled at once with different fields holds up to 256 accepted rows and 256 refused
/// ones per replica that wrote. ``perItem``, 4,096 places, is sixteen such replicas; past it a
/// new field is refused with an error (the transaction, a local edit or a peer's batch, changes
/// nothing). The price: an item row id past 65,536 makes its fields' row ids a byte longer.
enum FieldRows {
    static let shift: Int64 = 12
    /// How many field rows one item may have.
    static let perItem: Int64 = 1 << shift

    /// The row ids `item`'s fields may take.
    static func range(item: Int64) -> ClosedRange<Int64> {
        (item << shift)...((item << shift) + perItem - 1)
    }

    /// The two ends of ``range(item:)``, for `id BETWEEN ? AND ?`.
    static func arguments(item: Int64) -> StatementArguments {
        [item << shift, (item << shift) + perItem - 1]
    }

    /// SQL for a join that starts from an item: `field` (the field table's alias) is one of the
    /// rows of `item` (an expression for the item's row id), searched as a range of the field
    /// table's key. (A join that starts from a field finds its item by `i.id = f.item`.)
    static func of(item: String = "i.id", field: String = "f") -> String {
        "\(field).id BETWEEN (\(item) << \(shift)) AND (\(item) << \(shift)) + \(perItem - 1)"
    }

    /// The row id for a new field of `item`: the place after its last field (`isLast`: every
    /// place above is free), or the first free one if the last place is taken.
    static func next(item: Int64, db: Database) throws -> (row: Int64, isLast: Bool) {
        let range = range(item: item)
        let last = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT max(id) FROM field WHERE id BETWEEN ? AND ?"),
            arguments: arguments(item: item)
        )
        guard let last else { return (range.lowerBound, true) }
        if last < range.upperBound { return (last + 1, true) }
        let taken = Set(
            try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT id FROM field WHERE id BETWEEN ? AND ?"),
                arguments: arguments(item: item)
            )
        )
        guard let free = range.first(where: { !taken.contains($0) }) else {
            let id = try String.fetchOne(db, sql: "SELECT item_id FROM item WHERE id = ?", arguments: [item]) ?? "?"
            throw StoreError.io(
                "item \(id) has \(perItem) field rows (fields it has or had, and fields refused from peers), "
                    + "the most a replica keeps for one item: nothing was changed; copy the fields it still needs to a new item"
            )
        }
        return (free, false)
    }
}
