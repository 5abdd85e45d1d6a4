/// Collecting a deleted item (Docs/MERGE.md, "Causal stability and collection").
extension ItemState {
    /// The delete that made this item deleted: the tombstone's shown version saying so.
    public var deletingVersion: FieldVersion? {
        guard isDeleted else { return nil }
        return fields[.deleted]?.versions.filter { $0.write == .assign(.bool(true)) }
            .min { $0.isShown(before: $1) }
    }

    /// True if the item may be reduced to its minimal tombstone: it is deleted, deleted before
    /// `cutoff` (wall-clock milliseconds: past the trash window), and every write any of its
    /// fields has seen is below `stable`. Nothing concurrent with it can then still arrive, so
    /// what it shows is final until someone writes to it again, which a deleted item past its
    /// trash window refuses.
    public func isCollectable(below stable: VersionVector, deletedBefore cutoff: UInt64) -> Bool {
        guard let delete = deletingVersion, delete.timestamp.milliseconds < cutoff else { return false }
        return fields.values.allSatisfy { stable.covers($0.context) }
    }

    /// The item as a collected replica keeps it: its tombstone (the item's id and the deleting
    /// write), so peers that have not seen the delete still learn it, and its `_type`, which a
    /// rejoin reads to tell an item this replica created out of the others' sight (Docs/MERGE.md,
    /// "Coming back after being away"): without it, a collected item would be judged otherwise
    /// than the same item not collected yet.
    public var minimalTombstone: ItemState {
        ItemState(id: id, fields: fields.filter { Self.keptByCollection.contains($0.key) })
    }

    /// The fields a minimal tombstone keeps.
    public static let keptByCollection: Set<FieldName> = [.deleted, .type]
}

extension FieldChange {
    /// True if this change carries a write the replica has not seen (`seen`: its version
    /// vector). A collected item takes in only such changes: the writes it has seen, it forgot
    /// on purpose, and one that arrives again must not bring them back.
    public func isNews(to seen: VersionVector) -> Bool {
        switch self {
        case .state(let state):
            state.versions.contains { !seen.contains($0.dot) } || state.entries.contains { !seen.contains($0.dot) }
        case .delta(let delta):
            delta.versions.contains { !seen.contains($0.dot) } || delta.entries.contains { !seen.contains($0.dot) }
        }
    }
}
