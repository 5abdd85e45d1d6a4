/// One atomic local edit of one item: what a single CLI command asks for.
///
/// All of an edit's assignments share one dot, so they are applied, stored and synced together or
/// not at all.
public enum ItemEdit: Hashable, Sendable {
    /// Creates the item with a type and initial fields; refused if the id exists.
    case create(type: String, assignments: [Assignment])
    /// Changes fields of a live item.
    case update([Assignment])
    /// Changes a live item's type (a write of its `_type` field), with `assignments` in the same
    /// edit.
    case retype(String, assignments: [Assignment] = [])
    /// Writes the tombstone. Concurrent edits are kept, and come back with ``restore``.
    case delete
    /// Clears the tombstone (every delete this replica has seen).
    case restore
    /// Closes a field's open conflict with a value that supersedes every sibling (nil: by
    /// removing the field, when the removal is the version kept).
    case resolve(FieldName, Value?)
}

/// One change to one field, as written on the command line.
public enum Assignment: Hashable, Sendable {
    /// `FIELD=VALUE`: replaces the value (a list value replaces the whole list).
    case set(FieldName, Value)
    /// `FIELD+=ELEM`: adds an element to a list field (making the field a list if it is unset or null).
    case add(FieldName, Value)
    /// `FIELD-=ELEM`: removes an element from a list field.
    case remove(FieldName, Value)
    /// `lansync unset ID FIELD`: removes the field (a write of "absent", ``FieldVersion/Write/unset``).
    case unset(FieldName)

    public var field: FieldName {
        switch self {
        case .set(let f, _), .add(let f, _), .remove(let f, _), .unset(let f): f
        }
    }

    /// The value or element written; nil for an unset.
    public var value: Value? {
        switch self {
        case .set(_, let v), .add(_, let v), .remove(_, let v): v
        case .unset: nil
        }
    }
}
