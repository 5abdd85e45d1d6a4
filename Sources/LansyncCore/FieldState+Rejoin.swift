// A member that comes back after being away rejoins from a snapshot and re-issues the writes
// no one else holds under a new writer (Docs/MERGE.md, "Coming back after being away").

extension FieldState {
    /// The writes of this state made by one of `writers` that `seen` does not hold: what would
    /// be lost if this replica were replaced by one holding `seen`. Versions, list tags and the
    /// writes that removed tags, sorted.
    public func dots(of writers: Set<NodeID>, unseenBy seen: VersionVector) -> [Dot] {
        var dots = Set<Dot>()
        func note(_ dot: Dot) {
            if writers.contains(dot.node), !seen.contains(dot) { dots.insert(dot) }
        }
        versions.forEach { note($0.dot) }
        entries.forEach { note($0.dot) }
        for removal in removals {
            note(removal.by)
            removal.tags.forEach { note($0.dot) }
        }
        return dots.sorted()
    }

    /// True if every write this state holds or has seen is one of `writers`' that `seen` lacks:
    /// of an item's `_type`, that the item was created by those writers out of `seen`'s sight
    /// (a re-issue may bring it to a snapshot that never held it). A state keeps no superseded
    /// writes, so a retype by one of `writers` of an item created by them in `seen`'s sight
    /// looks the same; the store tells them apart by the field's history.
    public func isOnly(writers: Set<NodeID>, unseenBy seen: VersionVector) -> Bool {
        !versions.isEmpty && context.nodes.allSatisfy(writers.contains)
            && versions.allSatisfy { writers.contains($0.dot.node) && !seen.contains($0.dot) }
    }

    /// This state with the writes of `writers` that `seen` does not hold named anew (`renamed`
    /// maps each of them, ``dots(of:unseenBy:)``, to a dot of the writer that re-issues them),
    /// and everything else of those writers beyond `seen` forgotten: the same edits, with the
    /// same values, times and concurrency (a write that had not seen another still has not),
    /// issued by a writer whose every dot exists. Nil if a dot to rename has no new name.
    public func reissued(
        by writers: Set<NodeID>,
        unseenBy seen: VersionVector,
        renamed: [Dot: Dot]
    ) -> FieldState? {
        var missing = false
        func rename(_ dot: Dot) -> Dot {
            guard writers.contains(dot.node), !seen.contains(dot) else { return dot }
            guard let new = renamed[dot] else {
                missing = true
                return dot
            }
            return new
        }
        func clamp(_ vector: VersionVector) -> VersionVector {
            VersionVector(
                vector.counters.reduce(into: [NodeID: UInt64]()) { result, entry in
                    result[entry.key] = writers.contains(entry.key) ? min(entry.value, seen[entry.key]) : entry.value
                }
            )
        }
        let newVersions = versions.map { FieldVersion(dot: rename($0.dot), timestamp: $0.timestamp, write: $0.write) }
        let newEntries = entries.map {
            ListEntry(value: $0.value, dot: rename($0.dot), addedAt: $0.addedAt, position: $0.position)
        }
        let newRemovals = removals.map { removal in
            ListRemoval(
                by: rename(removal.by),
                tags: removal.tags.map { ListTag(value: $0.value, dot: rename($0.dot)) }
            )
        }
        var newContext = clamp(context)
        for dot in dots(of: writers, unseenBy: seen) {
            guard let new = renamed[dot] else { return nil }
            newContext.insert(new)
        }
        guard !missing else { return nil }
        return FieldState(
            context: newContext,
            versions: newVersions,
            entries: newEntries,
            removals: newRemovals,
            horizon: clamp(horizon)
        )
    }
}
