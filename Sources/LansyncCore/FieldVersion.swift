/// One write to a field that no later write (that its holder knows of) has superseded: a sibling.
///
/// A field holds one version after an uncontested write, and several after concurrent writes.
/// Everything in a version is fixed at write time and named by its ``dot``, so all replicas agree
/// on it.
public struct FieldVersion: Hashable, Sendable {
    public let dot: Dot
    public let timestamp: HLCTimestamp
    public let write: Write

    public init(dot: Dot, timestamp: HLCTimestamp, write: Write) {
        self.dot = dot
        self.timestamp = timestamp
        self.write = write
    }

    /// What the write did. A scalar assignment carries its value; a list write carries what it
    /// added and removed (for `history`), while the elements themselves live in the field's
    /// list entries and merge by union.
    public enum Write: Hashable, Sendable {
        case assign(Value)
        case list(ListChange)
        /// The relay refused the versions `rejected` (over its limits) and kept `kept` instead:
        /// shown like an assignment, and recognised by the writers of the rejected versions.
        case overrule(kept: Value, rejected: [Dot], reason: String)
        /// The field was removed: a write of "absent", which supersedes what its writer had seen
        /// and is superseded like any other, so a concurrent set and unset are two siblings (a
        /// conflict), never a silent loss. A field whose shown version is an unset is not shown.
        case unset
    }

    /// The order in which siblings are shown: the highest timestamp first, then the highest node id.
    /// A version's dot is unique, so this order is total and the same on every replica.
    public func isShown(before other: FieldVersion) -> Bool {
        (timestamp, dot.node, dot.counter) > (other.timestamp, other.dot.node, other.dot.counter)
    }
}

/// What one write did to a list field.
public struct ListChange: Hashable, Sendable {
    /// True if the write replaced the whole list (`FIELD=[...]`) rather than adding or removing.
    public var replaced: Bool
    public var added: [Value]
    public var removed: [Value]

    public init(replaced: Bool = false, added: [Value] = [], removed: [Value] = []) {
        self.replaced = replaced
        self.added = added
        self.removed = removed
    }
}

/// One tag of one element of a list field (add-wins observed-remove set).
///
/// Each add of an element makes a tag named by the adding write's dot; a remove deletes the tags
/// its writer had seen. An element is in the list while it has a tag, so a concurrent add survives
/// a remove that never saw it. ``addedAt`` and ``position`` say when the element was first added
/// (the write's timestamp, and its place among the elements that write added); they carry over
/// when an element already present is added again, so re-adding never reorders a list.
public struct ListEntry: Hashable, Sendable {
    public let value: Value
    public let dot: Dot
    public let addedAt: HLCTimestamp
    public let position: UInt32

    public init(value: Value, dot: Dot, addedAt: HLCTimestamp, position: UInt32 = 0) {
        self.value = value
        self.dot = dot
        self.addedAt = addedAt
        self.position = position
    }

    /// When the element was first added: the list's display order.
    public var firstAdded: FirstAdded { FirstAdded(timestamp: addedAt, position: position) }

    /// What names this tag: the element and the write that added it.
    public var tag: ListTag { ListTag(value: value, dot: dot) }
}

/// Names one tag of a list field: an element and the dot of the write that added it.
public struct ListTag: Hashable, Comparable, Sendable {
    public let value: Value
    public let dot: Dot

    public init(value: Value, dot: Dot) {
        self.value = value
        self.dot = dot
    }

    public static func < (lhs: ListTag, rhs: ListTag) -> Bool {
        lhs.value != rhs.value ? lhs.value < rhs.value : lhs.dot < rhs.dot
    }
}

/// One entry of a field's removal log (``FieldState/removals``): a write, and the list tags it
/// removed. Every replica that logs the write logs the same tags, since they come from its writer.
public struct ListRemoval: Hashable, Sendable {
    public let by: Dot
    /// Sorted and distinct.
    public let tags: [ListTag]

    public init(by: Dot, tags: [ListTag]) {
        self.by = by
        self.tags = Array(Set(tags)).sorted()
    }
}

/// The moment an element was first added to a list: a write's timestamp and the element's place
/// among that write's additions.
public struct FirstAdded: Hashable, Comparable, Sendable {
    public let timestamp: HLCTimestamp
    public let position: UInt32

    public static func < (lhs: FirstAdded, rhs: FirstAdded) -> Bool {
        (lhs.timestamp, lhs.position) < (rhs.timestamp, rhs.position)
    }
}
