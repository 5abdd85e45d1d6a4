/// The replicated state of one field of one item: the unit that is merged, stored and synced.
///
/// - ``context``: every write to this field that this state has seen (a version vector);
/// - ``versions``: the writes not superseded by another seen write (siblings; one when there is no
///   conflict), sorted by dot;
/// - ``entries``: for list fields, the element tags (add-wins observed-remove set), sorted.
///
/// A write supersedes exactly what its writer had seen. ``merge(_:)`` keeps an element (version or
/// entry) if the other side holds it too, or has never seen it; so a field changed on only one side
/// takes that side's change (the three-way merge), and concurrent writes become siblings. Merge is
/// commutative, associative and idempotent; the property tests check it.
public struct FieldState: Hashable, Sendable {
    public private(set) var context: VersionVector
    public private(set) var versions: [FieldVersion]
    public private(set) var entries: [ListEntry]

    /// A field nobody has written.
    public init() {
        context = VersionVector()
        versions = []
        entries = []
    }

    /// Rebuilds a state read from storage or the wire; nil if it breaks the invariants
    /// (a version or entry outside the context, duplicate dots), so a corrupt or lying source is
    /// refused instead of merged.
    public init?(context: VersionVector, versions: [FieldVersion], entries: [ListEntry]) {
        let versionDots = Set(versions.map(\.dot))
        guard versionDots.count == versions.count,
            Set(entries.map(\.key)).count == entries.count,
            versions.allSatisfy({ context.contains($0.dot) }),
            entries.allSatisfy({ context.contains($0.dot) }),
            !versions.isEmpty || (entries.isEmpty && context.isEmpty)
        else { return nil }
        self.context = context
        self.versions = versions.sorted { $0.dot < $1.dot }
        self.entries = entries.sorted(by: Self.entryOrder)
    }

    /// True if no write to this field has been seen.
    public var isEmpty: Bool { versions.isEmpty }

    // MARK: Writes

    /// Records a write that replaces the field's value with `value` (a list value replaces the whole
    /// list). `dot` must be new to this field, or the dot of the edit that wrote it last (one edit
    /// may assign a field more than once; the last assignment stands).
    public mutating func assign(_ value: Value, dot: Dot, timestamp: HLCTimestamp) {
        precondition(dot.counter >= context[dot.node], "a dot is never reused")
        if case .list(let elements) = value {
            let unique = Self.uniqued(elements)
            let firstAdded = firstAddTimes()
            entries = unique.enumerated().map { index, value in
                let first = firstAdded[value] ?? FirstAdded(timestamp: timestamp, position: UInt32(clamping: index))
                return ListEntry(value: value, dot: dot, addedAt: first.timestamp, position: first.position)
            }
            entries.sort(by: Self.entryOrder)
            versions = [
                FieldVersion(dot: dot, timestamp: timestamp, write: .list(ListChange(replaced: true, added: unique)))
            ]
        } else {
            entries = []
            versions = [FieldVersion(dot: dot, timestamp: timestamp, write: .assign(value))]
        }
        context.insert(dot)
    }

    /// Records a write that adds or removes one list element. A field that is not a list yet becomes
    /// one. The list writes of one edit share its dot and fold into one version.
    ///
    /// Removing drops the element's tags this writer has seen (all the tags present here). Adding
    /// replaces them with one new tag, so the add survives a concurrent remove that did not see it
    /// (add wins), while the element keeps its first-add time and its place in the list.
    public mutating func changeList(_ element: Value, add: Bool, dot: Dot, timestamp: HLCTimestamp) {
        precondition(dot.counter >= context[dot.node], "a dot is never reused")
        var change = ListChange()
        if versions.count == 1, versions[0].dot == dot {
            // An earlier assignment of the same edit: a list write continues it; a scalar one means
            // this edit replaced the list.
            if case .list(let earlier) = versions[0].write { change = earlier } else { change.replaced = true }
        }
        let first =
            firstAddTimes()[element]
            ?? FirstAdded(timestamp: timestamp, position: UInt32(clamping: change.added.count))
        entries.removeAll { $0.value == element }
        if add {
            entries.append(ListEntry(value: element, dot: dot, addedAt: first.timestamp, position: first.position))
            entries.sort(by: Self.entryOrder)
            change.added.append(element)
        } else {
            change.removed.append(element)
        }
        versions = [FieldVersion(dot: dot, timestamp: timestamp, write: .list(change))]
        context.insert(dot)
    }

    /// The relay's refusal of a field state over its limits: absorbs what `refused` has seen (so
    /// its versions are superseded everywhere) and writes `kept` instead, naming the refused
    /// versions and why. `dot` is the relay's own new write.
    public mutating func overrule(
        _ refused: FieldState,
        keeping kept: Value,
        reason: String,
        dot: Dot,
        timestamp: HLCTimestamp
    ) {
        let rejected = refused.versions.map(\.dot).filter { dot in !versions.contains { $0.dot == dot } }
        context.join(refused.context)
        assign(kept, dot: dot, timestamp: timestamp)
        versions = [
            FieldVersion(
                dot: dot,
                timestamp: timestamp,
                write: .overrule(kept: kept, rejected: rejected.sorted(), reason: String(reason.prefix(256)))
            )
        ]
    }

    // MARK: Merge

    /// Merges what another replica knows of this field into this state.
    public mutating func merge(_ other: FieldState) {
        versions = Self.mergeTagged(versions, context, other.versions, other.context, key: \.dot)
            .sorted { $0.dot < $1.dot }
        entries = Self.mergeTagged(entries, context, other.entries, other.context, key: \.key)
            .sorted(by: Self.entryOrder)
        context.join(other.context)
    }

    public func merged(with other: FieldState) -> FieldState {
        var result = self
        result.merge(other)
        return result
    }

    /// The observed-remove rule shared by versions and list tags: an element survives if both
    /// sides hold it, or if the side that lacks it has never seen its dot.
    private static func mergeTagged<Element, Key: Hashable>(
        _ left: [Element],
        _ leftContext: VersionVector,
        _ right: [Element],
        _ rightContext: VersionVector,
        key: (Element) -> Key
    ) -> [Element] where Element: DottedElement {
        let rightKeys = Set(right.map(key))
        let leftKeys = Set(left.map(key))
        var result = left.filter { rightKeys.contains(key($0)) || !rightContext.contains($0.dot) }
        result += right.filter { !leftKeys.contains(key($0)) && !leftContext.contains($0.dot) }
        return result
    }

    // MARK: Helpers

    func firstAddTimes() -> [Value: FirstAdded] {
        var times: [Value: FirstAdded] = [:]
        for entry in entries { times[entry.value] = min(times[entry.value] ?? entry.firstAdded, entry.firstAdded) }
        return times
    }

    static func uniqued(_ values: [Value]) -> [Value] {
        var seen = Set<Value>()
        return values.filter { seen.insert($0).inserted }
    }

    static func entryOrder(_ a: ListEntry, _ b: ListEntry) -> Bool {
        a.value != b.value ? a.value < b.value : a.dot < b.dot
    }
}

/// An element named by the dot of the write that made it.
protocol DottedElement {
    var dot: Dot { get }
}

extension FieldVersion: DottedElement {}
extension ListEntry: DottedElement {}
