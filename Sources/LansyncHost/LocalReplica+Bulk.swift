import LansyncJSON
import LansyncReplica
import LansyncStore

/// Edits of many items at once (`set`, `rm` and `restore` with `--where`, the API's query-scoped
/// PATCH, DELETE and restore): the items a query selects, changed in one transaction, all or
/// none, each item with its own dot (one change-feed entry per field).
extension LocalReplica {
    /// What a bulk edit does to each item it selects.
    public enum BulkAction: Sendable {
        /// `set --where`: these assignments (and a new type, when given).
        case update([Assignment], type: String?)
        /// `rm --where`: live items are deleted.
        case delete
        /// `restore --where`: deleted items are brought back.
        case restore

        /// The edit it makes of each item.
        var edit: ItemEdit {
            switch self {
            case let .update(assignments, type):
                type.map { .retype($0, assignments: assignments) } ?? .update(assignments)
            case .delete: .delete
            case .restore: .restore
            }
        }

        /// Which items it can act on: deleted ones for a restore, live ones otherwise.
        var actsOnDeleted: Bool { if case .restore = self { true } else { false } }
    }

    /// The ids of the items `query` selects, of `type`, that `action` can act on (live items, or
    /// deleted ones for a restore), sorted by id.
    public func select(_ query: ItemQuery, type: String?, for action: BulkAction) throws -> [ItemID] {
        let stored = try store.query(query, type: type, includeDeleted: action.actsOnDeleted, limit: .max).items
        return stored.filter { $0.deleted == action.actsOnDeleted }.map(\.id).sorted()
    }

    /// What a bulk edit prints with `--json` and the API answers: `{"changed": N, "ids": [...]}`.
    public static func bulkJSONText(_ ids: [ItemID]) -> String {
        JSON.object([("changed", .integer(Int64(ids.count))), ("ids", .array(ids.map { .string($0.rawValue) }))]).text
    }

    /// Does `action` to every item of `ids` in one transaction: all are changed, or none (the
    /// first refusal, such as an item deleted meanwhile, is thrown). A running node is told once.
    @discardableResult
    public func perform(_ action: BulkAction, on ids: [ItemID]) throws -> [Dot] {
        guard !ids.isEmpty else { return [] }
        let edit = try resolvingLinks(action.edit)
        let dots = try store.apply(ids.map { ($0, edit) }, wallMilliseconds: WallClock.milliseconds)
        if let first = dots.first { directory.noteNewWriter(store, issued: first) }
        directory.nudgeNode()
        return dots
    }
}
