public import LansyncCore

/// What a field's `history` keeps when its state changes: the one rule both stores follow.
///
/// History holds what the field state no longer shows (versions it superseded, and versions
/// that arrived and were overruled at once), and, while the field is in conflict, its siblings
/// in the order they arrived (the relay's first-seen policy reads it). A version never
/// superseded and never in conflict lives only in the state. Each field keeps at most the
/// replica's history limit of versions, live ones included.
public enum FieldHistory {
    /// The versions to record, in order, when a field's state goes from `old` to `new`
    /// (`newDots`: `new`'s dots, which the caller has at hand).
    public static func recorded(
        old: FieldState?,
        new: FieldState,
        newDots: [Dot],
        overruled: [FieldVersion] = []
    ) -> [FieldVersion] {
        // Arrays, not sets: a field holds a version or a few, and a set hashes every dot.
        let oldDots = old?.versions.map(\.dot) ?? []
        var recorded = old?.versions.filter { !newDots.contains($0.dot) } ?? []
        recorded += overruled.filter { !oldDots.contains($0.dot) && !newDots.contains($0.dot) }
        if new.versions.count > 1 {
            recorded +=
                new.versions.filter { oldDots.contains($0.dot) } + new.versions.filter { !oldDots.contains($0.dot) }
        }
        return recorded
    }

    /// How many of the field's newest history rows to keep: the limit, less the live versions
    /// that have no row (a field in conflict has a row for each).
    public static func rowsKept(limit: Int, new: FieldState) -> Int {
        limit - (new.versions.count > 1 ? 0 : new.versions.count)
    }
}
