public import LansyncCore

/// What one change to a field was, as the change feed tells it (Docs/API.md, "The change feed").
/// The raw values are what the replica file stores.
public enum ChangeKind: Int, Sendable, CaseIterable {
    /// An item came into being (its `_type` was first written), here or on a peer.
    case create = 0
    /// A local edit (the CLI, the API).
    case edit = 1
    /// A change merged from a peer.
    case merge = 2
    /// Concurrent writes left the field with more than one value.
    case conflict = 3
    /// The field's conflict was settled (a resolve, a later write, or the relay).
    case settle = 4
    /// The item was deleted (its `_deleted` became true).
    case delete = 5
    /// The item was restored.
    case restore = 6

    /// The word the feed shows.
    public var name: String {
        switch self {
        case .create: "create"
        case .edit: "edit"
        case .merge: "merge"
        case .conflict: "conflict"
        case .settle: "settle"
        case .delete: "delete"
        case .restore: "restore"
        }
    }
}

/// Where local changes come from, for the feed's `edit` / `merge`.
/// Where a transaction's changes come from, for the change feed: a local edit, or a peer's batch.
public enum ChangeOrigin: Sendable {
    case local, peer
}

extension ChangeKind {
    /// The kind of change a field's new state is, against its old one (nil for a new field):
    /// the one rule both stores number their feed by. `conflict` is whether the new state is in
    /// conflict as the feed counts it (never the tombstone).
    public static func of(
        _ name: FieldName,
        old: FieldState?,
        new: FieldState,
        conflict: Bool,
        origin: ChangeOrigin
    ) -> ChangeKind {
        let wasInConflict = old.map { $0.versions.count > 1 && $0.hasConflict } ?? false
        if name == .deleted {
            let was = old.map(Self.deletes) ?? false
            let now = Self.deletes(new)
            return was == now ? (origin == .local ? .edit : .merge) : now ? .delete : .restore
        } else if name == .type, old?.isEmpty ?? true {
            return .create
        } else if conflict, !wasInConflict {
            return .conflict
        } else if wasInConflict, !conflict {
            return .settle
        } else {
            return origin == .local ? .edit : .merge
        }
    }

    /// Whether a tombstone's state deletes its item.
    static func deletes(_ state: FieldState) -> Bool {
        state.versions.contains { $0.write == .assign(.bool(true)) }
    }
}
