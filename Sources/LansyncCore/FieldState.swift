/// The replicated state of one field of one item: the unit that is merged, stored and synced.
///
/// - ``context``: every write to this field that this state has seen (a version vector);
/// - ``versions``: the writes not superseded by another seen write (siblings; one when there is no
///   conflict), sorted by dot;
/// - ``entries``: for list fields, the element tags (add-wins observed-remove set), sorted;
/// - ``removals`` and ``horizon``: the removal log, which list tags recent writes removed. It is
///   complete for every write ``horizon`` has not seen, so a replica can send a peer only the
///   part of a list the peer lacks (``FieldDelta``) instead of the whole list.
///
/// A write supersedes exactly what its writer had seen. ``merge(_:)`` keeps an element (version or
/// entry) if the other side holds it too, or has never seen it; so a field changed on only one side
/// takes that side's change (the three-way merge), and concurrent writes become siblings. Merge is
/// commutative, associative and idempotent; the property tests check it.
public struct FieldState: Hashable, Sendable {
    public private(set) var context: VersionVector
    public private(set) var versions: [FieldVersion]
    public private(set) var entries: [ListEntry]
    /// The writes that removed list tags, with the tags each removed, sorted by the removing dot:
    /// every such write not covered by ``horizon`` (older ones are forgotten, see
    /// ``Limits/maxLoggedRemovals``).
    public private(set) var removals: [ListRemoval]
    /// The writes whose removals the log no longer holds (or never knew: a state from an older
    /// file or peer has its whole context here). A peer that has seen all of them can be sent a
    /// delta; one that has not gets the whole state.
    public private(set) var horizon: VersionVector

    /// A field nobody has written.
    public init() {
        context = VersionVector()
        versions = []
        entries = []
        removals = []
        horizon = VersionVector()
    }

    /// Rebuilds a state read from storage or the wire; nil if it breaks the invariants
    /// (a version, entry or removal outside the context, duplicate dots), so a corrupt or lying
    /// source is refused instead of merged. A log longer than a replica keeps is cut as a replica
    /// would cut it.
    ///
    /// - Parameter horizon: nil for a state that carries no removal log (an older file or peer):
    ///   its whole context, which claims nothing about removals.
    public init?(
        context: VersionVector,
        versions: [FieldVersion],
        entries: [ListEntry],
        removals: [ListRemoval] = [],
        horizon: VersionVector? = nil
    ) {
        let horizon = horizon ?? context
        guard versions.map(\.dot).hasNoRepeats,
            entries.map(\.tag).hasNoRepeats,
            versions.allSatisfy({ context.contains($0.dot) }),
            entries.allSatisfy({ context.contains($0.dot) }),
            !versions.isEmpty || (entries.isEmpty && context.isEmpty),
            context.covers(horizon),
            Self.isValidLog(removals, context: context)
        else { return nil }
        self.context = context
        self.versions = versions.sorted { $0.dot < $1.dot }
        self.entries = entries.sorted(by: Self.entryOrder)
        self.removals = removals.sorted { $0.by < $1.by }
        self.horizon = horizon
        normalizeLog()
    }

    static func isValidLog(_ removals: [ListRemoval], context: VersionVector) -> Bool {
        removals.map(\.by).hasNoRepeats
            && removals.allSatisfy { removal in
                context.contains(removal.by) && !removal.tags.isEmpty
                    && removal.tags.allSatisfy { context.contains($0.dot) }
            }
    }

    /// True if no write to this field has been seen.
    public var isEmpty: Bool { versions.isEmpty }

    // MARK: Writes

    /// Records a write that replaces the field's value with `value` (a list value replaces the whole
    /// list). `dot` must be new to this field, or the dot of the edit that wrote it last (one edit
    /// may assign a field more than once; the last assignment stands).
    public mutating func assign(_ value: Value, dot: Dot, timestamp: HLCTimestamp) {
        precondition(dot.counter >= context[dot.node], "a dot is never reused")
        let before = entries
        defer { logRemoval(of: before, keeping: entries, by: dot) }
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

    /// Records a write that removes the field (``FieldVersion/Write/unset``): it supersedes every
    /// version and list element this state has seen. `dot` follows ``assign(_:dot:timestamp:)``'s rule.
    public mutating func unset(dot: Dot, timestamp: HLCTimestamp) {
        precondition(dot.counter >= context[dot.node], "a dot is never reused")
        logRemoval(of: entries, keeping: [], by: dot)
        entries = []
        versions = [FieldVersion(dot: dot, timestamp: timestamp, write: .unset)]
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
        logRemoval(of: entries.filter { $0.value == element }, keeping: [], by: dot)
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
        merge(refused)
        overrule(rejecting: rejected, keeping: kept, reason: reason, dot: dot, timestamp: timestamp)
    }

    /// The same refusal, on a state that has already merged what it refuses (a delta, say):
    /// replaces everything with `kept`, naming the `rejected` versions.
    public mutating func overrule(
        rejecting rejected: [Dot],
        keeping kept: Value,
        reason: String,
        dot: Dot,
        timestamp: HLCTimestamp
    ) {
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
        entries = Self.mergeTagged(entries, context, other.entries, other.context, key: \.tag)
            .sorted(by: Self.entryOrder)
        context.join(other.context)
        mergeLog(other.removals, horizon: other.horizon)
    }

    public func merged(with other: FieldState) -> FieldState {
        var result = self
        result.merge(other)
        return result
    }

    /// Merges a delta: the same result as merging the whole state it was taken from, provided
    /// this replica has seen every write to the field up to the delta's base.
    public mutating func merge(_ delta: FieldDelta) {
        let senderDots = SmallSet(delta.versions.map(\.dot) + delta.keptVersions)
        let held = SmallSet(versions.map(\.dot))
        var merged = versions.filter { senderDots.contains($0.dot) || !delta.context.contains($0.dot) }
        merged += delta.versions.filter { !held.contains($0.dot) && !context.contains($0.dot) }
        versions = merged.sorted { $0.dot < $1.dot }

        let removed = SmallSet(delta.removals.flatMap(\.tags))
        let sent = SmallSet(delta.entries.map(\.tag))
        let heldTags = SmallSet(entries.map(\.tag))
        var list = entries.filter { entry in
            if !delta.context.contains(entry.dot) { return true }
            if delta.base.contains(entry.dot) { return !removed.contains(entry.tag) }
            return sent.contains(entry.tag)
        }
        list += delta.entries.filter { !heldTags.contains($0.tag) && !context.contains($0.dot) }
        entries = list.sorted(by: Self.entryOrder)

        context.join(delta.context)
        mergeLog(delta.removals, horizon: delta.horizon)
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
        let rightKeys = SmallSet(right.map(key))
        let leftKeys = SmallSet(left.map(key))
        var result = left.filter { rightKeys.contains(key($0)) || !rightContext.contains($0.dot) }
        result += right.filter { !leftKeys.contains(key($0)) && !leftContext.contains($0.dot) }
        return result
    }

    // MARK: Removal log

    /// Records that the write `dot` removed the tags of `before` that `after` no longer holds.
    /// A tag of the write's own dot (an earlier step of the same edit) never left this replica and
    /// is not logged.
    mutating func logRemoval(of before: [ListEntry], keeping after: [ListEntry], by dot: Dot) {
        let kept = Set(after.map(\.tag))
        let gone = before.map(\.tag).filter { $0.dot != dot && !kept.contains($0) }
        guard !gone.isEmpty else { return }
        mergeLog([ListRemoval(by: dot, tags: gone)], horizon: VersionVector())
    }

    /// Joins another log into this one: the union of the removals, the join of the horizons, then
    /// the log cut to its bound. Each step is a join or a closure, so merging logs stays
    /// commutative, associative and idempotent.
    mutating func mergeLog(_ other: [ListRemoval], horizon otherHorizon: VersionVector) {
        horizon.join(otherHorizon)
        if !other.isEmpty {
            var byDot: [Dot: Set<ListTag>] = [:]
            for removal in removals + other { byDot[removal.by, default: []].formUnion(removal.tags) }
            removals = byDot.map { ListRemoval(by: $0.key, tags: Array($0.value)) }.sorted { $0.by < $1.by }
        }
        normalizeLog()
    }

    /// Drops what the horizon covers, then keeps at most ``Limits/maxLoggedRemovals`` tags per
    /// removing node: older removals of a node over that bound are forgotten by raising the
    /// horizon past them (a peer that has not seen them then gets the whole state).
    mutating func normalizeLog() {
        removals.removeAll { horizon.contains($0.by) }
        var tagsPerNode: [NodeID: Int] = [:]
        for removal in removals { tagsPerNode[removal.by.node, default: 0] += removal.tags.count }
        for (node, count) in tagsPerNode where count > Limits.maxLoggedRemovals {
            var kept = 0
            for removal in removals.reversed() where removal.by.node == node {
                kept += removal.tags.count
                if kept > Limits.maxLoggedRemovals {
                    horizon.raise(node, to: removal.by.counter)
                    break
                }
            }
        }
        if tagsPerNode.values.contains(where: { $0 > Limits.maxLoggedRemovals }) {
            removals.removeAll { horizon.contains($0.by) }
        }
    }

    // MARK: Refused writes

    /// The value this field shows if the `refused` writes are left out (a revoked node's writes,
    /// ``RevokedWriters``): the value of the live version shown among the others; for a list,
    /// the elements the others added (also when every live version is refused: the list's
    /// earlier elements stay, a refused write's removals aside); nil if nothing is left.
    public func shownValue(without refused: Set<Dot>) -> Value? {
        guard !refused.isEmpty else { return shownValue }
        var kept = self
        kept.entries = entries.filter { !refused.contains($0.dot) }
        guard let shown = versions.filter({ !refused.contains($0.dot) }).min(by: { $0.isShown(before: $1) }) else {
            return kept.entries.isEmpty ? nil : .list(kept.listValue)
        }
        switch shown.write {
        case .assign(let value), .overrule(let value, _, _): return value
        case .list: return .list(kept.listValue)
        case .unset: return nil
        }
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
