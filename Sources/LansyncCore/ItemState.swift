/// The replicated state of one item: its fields, including the reserved `_type` and `_deleted`.
///
/// An item exists once any of its fields has been written. Deleting writes a tombstone into
/// `_deleted`; the other fields are kept, so a concurrent edit is never lost and `restore` brings
/// it back. Rows are only ever hidden by a tombstone, never by absence.
public struct ItemState: Hashable, Sendable {
    public let id: ItemID
    public private(set) var fields: [FieldName: FieldState]

    /// The type shown for an item whose `_type` is unknown (e.g. only some fields synced yet).
    public static let defaultType = "item"

    public init(id: ItemID, fields: [FieldName: FieldState] = [:]) {
        self.id = id
        self.fields = fields.filter { !$0.value.isEmpty }
    }

    public var exists: Bool { !fields.isEmpty }

    /// Deleted if any concurrent version of the tombstone says so: a delete wins over a concurrent
    /// restore and over concurrent edits.
    public var isDeleted: Bool {
        fields[.deleted]?.versions.contains { $0.write == .assign(.bool(true)) } ?? false
    }

    public var type: String {
        if case .string(let type)? = fields[.type]?.shownValue { return type }
        return Self.defaultType
    }

    /// The user fields with their shown values.
    public var shownFields: [FieldName: Value] {
        var result: [FieldName: Value] = [:]
        for (name, state) in fields where !name.isReserved {
            if let value = state.shownValue { result[name] = value }
        }
        return result
    }

    /// The fields with an open conflict, by name. The tombstone never conflicts (delete wins).
    public var conflictedFields: [FieldName] {
        fields.filter { $0.key != .deleted && $0.value.hasConflict }.map(\.key).sorted()
    }

    /// How many fields ``conflictedFields`` names, counted without building the list (the store
    /// keeps it in the item's row at every write).
    public var conflictCount: Int {
        var count = 0
        for (name, state) in fields where name != .deleted && state.hasConflict { count += 1 }
        return count
    }

    public var conflicts: [FieldConflict] {
        conflictedFields.compactMap { name in
            guard let state = fields[name], !state.isEmpty else { return nil }
            return FieldConflict(item: id, field: name, state: state)
        }
    }

    public var view: ItemView {
        ItemView(id: id, type: type, fields: shownFields, deleted: isDeleted, conflicts: conflictedFields)
    }

    // MARK: Local edits

    /// Checks an edit against this state and returns the field states it produces, all written
    /// with `dot`. Throws, changing nothing, if the edit is not valid here.
    ///
    /// - Parameter trashWindow: how long (ms) a deleted item stays restorable, judged against
    ///   `timestamp` (which the hybrid clock keeps at or past every write this replica has seen,
    ///   the delete included); nil: for ever.
    public func applying(
        _ edit: ItemEdit,
        dot: Dot,
        timestamp: HLCTimestamp,
        trashWindow: UInt64? = nil
    ) throws(EditError) -> [FieldName: FieldState] {
        var changed: [FieldName: FieldState] = [:]
        func state(_ name: FieldName) -> FieldState { changed[name] ?? fields[name] ?? FieldState() }

        switch edit {
        case let .create(type, assignments):
            guard !exists else { throw .itemExists(id) }
            try Self.validate(type: type)
            // Grown once, not doubled field by field (an import creates items of many fields).
            changed.reserveCapacity(assignments.count + 1)
            var typeState = state(.type)
            typeState.assign(.string(type), dot: dot, timestamp: timestamp)
            changed[.type] = typeState
            try apply(assignments, to: &changed, dot: dot, timestamp: timestamp)

        case .update(let assignments):
            try requireLive()
            guard !assignments.isEmpty else { throw .noAssignments }
            try apply(assignments, to: &changed, dot: dot, timestamp: timestamp)

        case let .retype(type, assignments):
            try requireLive()
            try Self.validate(type: type)
            var typeState = state(.type)
            typeState.assign(.string(type), dot: dot, timestamp: timestamp)
            changed[.type] = typeState
            try apply(assignments, to: &changed, dot: dot, timestamp: timestamp)

        case .delete:
            try requireLive()
            var tombstone = state(.deleted)
            tombstone.assign(.bool(true), dot: dot, timestamp: timestamp)
            changed[.deleted] = tombstone

        case .restore:
            changed[.deleted] = try restoring(dot: dot, timestamp: timestamp, trashWindow: trashWindow)

        case let .resolve(name, value):
            changed[name] = try resolving(name, to: value, dot: dot, timestamp: timestamp)
        }
        return changed
    }

    /// The `_deleted` field's state after a restore (``ItemEdit/restore``), refused past the
    /// trash window.
    private func restoring(dot: Dot, timestamp: HLCTimestamp, trashWindow: UInt64?) throws(EditError) -> FieldState {
        guard exists else { throw .unknownItem(id) }
        guard isDeleted else { throw .itemNotDeleted(id) }
        if let trashWindow, let delete = deletingVersion,
            delete.timestamp.milliseconds &+ trashWindow < timestamp.milliseconds
        {
            throw .pastTrashWindow(id, deletedAt: delete.timestamp.milliseconds)
        }
        var tombstone = fields[.deleted] ?? FieldState()
        tombstone.assign(.bool(false), dot: dot, timestamp: timestamp)
        return tombstone
    }

    /// A conflicted field's state once settled with `value` (nil: removed), as
    /// ``ItemEdit/resolve(_:_:)`` asks.
    private func resolving(
        _ name: FieldName,
        to value: Value?,
        dot: Dot,
        timestamp: HLCTimestamp
    ) throws(EditError) -> FieldState {
        guard exists else { throw .unknownItem(id) }
        guard name != .deleted, fields[name]?.hasConflict == true else { throw .noConflict(id, name) }
        var resolved = fields[name] ?? FieldState()
        if let value {
            try Self.validate(value, of: name)
            if name == .type {
                guard case .string(let type) = value else { throw .invalidType("(\(value.kindName), not text)") }
                try Self.validate(type: type)
            }
            resolved.assign(value, dot: dot, timestamp: timestamp)
        } else {
            // An item always has a type: its conflict is settled with one.
            guard name != .type else { throw .invalidType("(none)") }
            resolved.unset(dot: dot, timestamp: timestamp)
        }
        return resolved
    }

    /// Applies a local edit (validated as in ``applying(_:dot:timestamp:)``) and returns the changed
    /// field states.
    @discardableResult
    public mutating func apply(
        _ edit: ItemEdit,
        dot: Dot,
        timestamp: HLCTimestamp,
        trashWindow: UInt64? = nil
    ) throws(EditError) -> [FieldName: FieldState] {
        let changed = try applying(edit, dot: dot, timestamp: timestamp, trashWindow: trashWindow)
        // A new item's fields are all new: grown once. (An update's mostly exist already, and
        // reserving for all of them could rehash a dictionary that had room.)
        if fields.isEmpty { fields.reserveCapacity(changed.count) }
        for (name, state) in changed { fields[name] = state }
        return changed
    }

    /// A value a field may hold: at most ``Limits/maxValueBytes`` encoded, and lists nested at
    /// most ``Limits/maxValueNesting`` deep (a deeper one could not be read back).
    static func validate(_ value: Value, of name: FieldName) throws(EditError) {
        guard value.encodedSize <= Limits.maxValueBytes else {
            throw .valueTooLarge(name, bytes: value.encodedSize)
        }
        guard value.nesting <= Limits.maxValueNesting else { throw .valueTooDeep(name, nesting: value.nesting) }
    }

    /// Item types: 1 to ``Limits/maxTypeBytes`` bytes with no control characters.
    public static func validate(type: String) throws(EditError) {
        guard type.utf8.count <= Limits.maxTypeBytes else { throw .invalidType(type) }
        try checkSpelling(type: type)
    }

    /// The rules of a type other than its length: not empty, no control characters.
    public static func checkSpelling(type: String) throws(EditError) {
        guard !type.isEmpty, !type.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw .invalidType(type)
        }
    }

    private func requireLive() throws(EditError) {
        guard exists else { throw .unknownItem(id) }
        guard !isDeleted else { throw .itemDeleted(id) }
    }

    private func apply(
        _ assignments: [Assignment],
        to changed: inout [FieldName: FieldState],
        dot: Dot,
        timestamp: HLCTimestamp
    ) throws(EditError) {
        for assignment in assignments {
            let name = assignment.field
            guard !name.isReserved else {
                throw .invalidFieldName(name.rawValue, reason: "names starting with '_' are reserved")
            }
            var field = changed[name] ?? fields[name] ?? FieldState()
            switch assignment {
            case .set(_, let value):
                try Self.validate(value, of: name)
                field.assign(value, dot: dot, timestamp: timestamp)
            case .unset:
                // Removing what this replica does not show is no edit: say so rather than write
                // an absence (a concurrent set elsewhere stays, as any unseen write does).
                guard field.shownValue != nil || field.hasConflict else { throw .noField(id, name) }
                field.unset(dot: dot, timestamp: timestamp)
            case .add(_, let element), .remove(_, let element):
                // Checked as the list it would make: a removal keeps the element in the field's
                // state even when the list never held it.
                try Self.validate(.list([element]), of: name)
                if let shown = field.shownValue, !shown.isList, shown != .null {
                    throw .notAList(id, name, kind: shown.kindName)
                }
                var isAdd = false
                if case .add = assignment { isAdd = true }
                field.changeList(element, add: isAdd, dot: dot, timestamp: timestamp)
            }
            if let shown = field.shownValue { try Self.validate(shown, of: name) }
            changed[name] = field
        }
        // Counted, not collected into a set: the fields held, and the new ones among the changed.
        var userFields = 0
        for name in fields.keys where !name.isReserved { userFields += 1 }
        for name in changed.keys where !name.isReserved && fields[name] == nil { userFields += 1 }
        guard userFields <= Limits.maxFieldsPerItem else { throw .tooManyFields(id, count: userFields) }
    }

    // MARK: Remote changes

    /// Merges a field state received from another replica.
    public mutating func merge(_ name: FieldName, _ state: FieldState) {
        fields[name, default: FieldState()].merge(state)
    }

    /// Merges everything another replica knows of this item.
    public mutating func merge(_ other: ItemState) {
        for (name, state) in other.fields { merge(name, state) }
    }
}

/// What users see of an item: its shown values, whether it is deleted, which fields conflict.
public struct ItemView: Hashable, Sendable {
    public let id: ItemID
    public let type: String
    public let fields: [FieldName: Value]
    public let deleted: Bool
    public let conflicts: [FieldName]

    public init(id: ItemID, type: String, fields: [FieldName: Value], deleted: Bool, conflicts: [FieldName]) {
        self.id = id
        self.type = type
        self.fields = fields
        self.deleted = deleted
        self.conflicts = conflicts
    }
}

/// An open conflict: concurrent writes left a field with different values.
public struct FieldConflict: Hashable, Sendable {
    public let item: ItemID
    public let field: FieldName
    /// The distinct values, the shown one first (a version that removed the field stands for
    /// none: ``removed``).
    public let values: [Value]
    /// The value shown; nil when the shown version removed the field.
    public let shown: Value?
    /// True if one of the concurrent versions removed the field.
    public let removed: Bool
    /// The concurrent versions behind the values (who wrote each, and when), the shown one first.
    public let versions: [FieldVersion]

    public init(item: ItemID, field: FieldName, state: FieldState) {
        self.item = item
        self.field = field
        self.values = state.candidateValues
        self.shown = state.shownValue
        self.removed = state.hasUnset
        self.versions = state.versions.sorted { $0.isShown(before: $1) }
    }
}
