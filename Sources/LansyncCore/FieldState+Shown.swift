extension FieldState {
    /// The version every replica shows: highest timestamp, then highest node id. Nil for an
    /// unwritten field.
    public var shownVersion: FieldVersion? {
        versions.min { $0.isShown(before: $1) }
    }

    /// The list the entries make up: each element once, in order of first add (within one write,
    /// in the order the writer gave), then by value.
    public var listValue: [Value] {
        firstAddTimes().sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }.map(\.key)
    }

    /// The value users see; nil for an unwritten field, or one whose shown version removed it
    /// (``FieldVersion/Write/unset``). A deterministic function of the state, so replicas holding
    /// the same state show the same value.
    public var shownValue: Value? {
        guard let shown = shownVersion else { return nil }
        return value(of: shown)
    }

    /// The value `version` stands for: its own, the merged list for a list write, nil for an unset.
    public func value(of version: FieldVersion) -> Value? {
        switch version.write {
        case .assign(let value), .overrule(let value, _, _): return value
        case .list: return .list(listValue)
        case .unset: return nil
        }
    }

    /// True if a live version removed the field (alone, or beside concurrent values).
    public var hasUnset: Bool { versions.contains { $0.write == .unset } }

    /// The distinct values the concurrent versions stand for, the shown one first (an unset
    /// stands for none: ``hasUnset``). Every list version stands for the same merged list (lists
    /// never conflict with lists).
    public var candidateValues: [Value] {
        var result: [Value] = []
        for version in versions.sorted(by: { $0.isShown(before: $1) }) {
            if let value = value(of: version), !result.contains(value) { result.append(value) }
        }
        return result
    }

    /// True when concurrent writes left different values (an unset counting as one, "absent"):
    /// an open conflict that stays listed until a later write, a `resolve`, or the relay settles it.
    public var hasConflict: Bool {
        // One version stands for one value or for none: never a conflict. Most fields hold one,
        // and this is asked of every field a write saves.
        guard versions.count > 1 else { return false }
        return candidateValues.count + (hasUnset ? 1 : 0) > 1
    }
}
