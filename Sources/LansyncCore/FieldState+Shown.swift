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

    /// The value users see; nil for an unwritten field. A deterministic function of the state, so
    /// replicas holding the same state show the same value.
    public var shownValue: Value? {
        guard let shown = shownVersion else { return nil }
        switch shown.write {
        case .assign(let value), .overrule(let value, _, _): return value
        case .list: return .list(listValue)
        }
    }

    /// The distinct values the concurrent versions stand for, the shown one first. Every list
    /// version stands for the same merged list (lists never conflict with lists).
    public var candidateValues: [Value] {
        var result: [Value] = []
        for version in versions.sorted(by: { $0.isShown(before: $1) }) {
            let value: Value
            switch version.write {
            case .assign(let v), .overrule(let v, _, _): value = v
            case .list: value = .list(listValue)
            }
            if !result.contains(value) { result.append(value) }
        }
        return result
    }

    /// True when concurrent writes left different values: an open conflict that stays listed until
    /// a later write, a `resolve`, or the relay settles it.
    public var hasConflict: Bool { candidateValues.count > 1 }
}
