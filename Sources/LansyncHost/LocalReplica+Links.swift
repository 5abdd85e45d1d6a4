import LansyncJSON
import LansyncReplica
import LansyncStore

/// Links between items (``Value/ref(_:)``): written as `@ID` (a unique start will do), read with
/// their target's title, found from either end, and checked for targets that are gone.
extension LocalReplica {
    /// Where a link points, as this replica holds it now.
    public enum LinkTarget: Sendable, Equatable {
        /// A live item, with the title people know it by (its `title` or `name`), if any.
        case live(title: String?)
        case deleted(title: String?)
        /// No item with that id here: never made, made on a machine not yet synced, or purged.
        case missing
    }

    /// `edit` with each link it writes resolved to a whole id: a unique start of an item's id
    /// becomes that id. A link that names no item here, or several, is refused with what to do.
    public func resolvingLinks(_ edit: ItemEdit) throws -> ItemEdit {
        switch edit {
        case let .create(type, assignments): .create(type: type, assignments: try resolvingLinks(assignments))
        case .update(let assignments): .update(try resolvingLinks(assignments))
        case let .retype(type, assignments): .retype(type, assignments: try resolvingLinks(assignments))
        case let .resolve(field, value?): .resolve(field, try resolvingLinks(value))
        case .resolve, .delete, .restore: edit
        }
    }

    public func resolvingLinks(_ assignments: [Assignment]) throws -> [Assignment] {
        try assignments.map { assignment in
            switch assignment {
            case let .set(field, value): .set(field, try resolvingLinks(value))
            case let .add(field, value): .add(field, try resolvingLinks(value))
            case let .remove(field, value): .remove(field, try resolvingLinks(value))
            case .unset: assignment
            }
        }
    }

    /// `query` with each link its conditions name resolved to a whole id (`project = @1a2b`).
    public func resolvingLinks(_ query: ItemQuery) throws -> ItemQuery {
        ItemQuery(
            filters: try query.filters.map { filter in
                guard let value = filter.value, !value.links.isEmpty else { return filter }
                return ItemQuery.Filter(field: filter.field, op: filter.op, value: try resolvingLinks(value))
            },
            sort: query.sort
        )
    }

    func resolvingLinks(_ value: Value) throws -> Value {
        switch value {
        case .ref(let typed):
            let id: ItemID
            do {
                id = try AssignmentParser.resolveItemID(typed.rawValue, in: store)
            } catch var ambiguous as HostError {
                // Several items match: the API's 409, as for any edit that meets this replica's state.
                ambiguous.code = .conflict
                throw ambiguous
            }
            guard try store.itemState(id)?.exists == true else {
                var unknown = HostError(
                    "no item's id starts with '\(typed.rawValue)': a link names an item of this replica ('lansync list' shows them); to store the text, quote it: '\"@\(typed.rawValue)\"'"
                )
                // The edit is sound, and this replica's state refuses it (the API's 409): the item
                // it would edit is there.
                unknown.code = .conflict
                throw unknown
            }
            return .ref(id)
        case .list(let elements): return .list(try elements.map(resolvingLinks))
        default: return value
        }
    }

    /// Where each of `ids` points.
    public func targets(_ ids: some Sequence<ItemID>) throws -> [ItemID: LinkTarget] {
        var result: [ItemID: LinkTarget] = [:]
        for id in Set(ids) {
            guard let item = try store.storedItem(id, withLocalEdits: false) else {
                result[id] = .missing
                continue
            }
            let title = ["title", "name"].lazy.compactMap { name in
                item.fields.first { $0.name.rawValue == name }.flatMap { field -> String? in
                    if case .string(let text) = field.value { text } else { nil }
                }
            }.first
            result[id] = item.deleted ? .deleted(title: title) : .live(title: title)
        }
        return result
    }

    /// The live items with a field that links to `target` (in a list too), and those fields:
    /// what `list --links-to` shows, and what `rm` counts (an index, not a scan).
    public func itemsLinking(to target: ItemID) throws -> [(item: Item, fields: [FieldName])] {
        try store.itemsLinking(to: target).compactMap { link in
            try store.storedItem(link.item, withLocalEdits: true).map { (Item($0, sync: nil), link.fields) }
        }
    }

    /// The live items with a field that links to `target`, among those `query` selects (of
    /// `type`, those `search` matches), in the query's order, at most `limit`: what `list
    /// --links-to` and the API's `links_to` answer alike, with a query or without.
    public func items(
        linkingTo target: ItemID,
        _ query: ItemQuery,
        type: String? = nil,
        search: ItemSearch? = nil,
        limit: Int = .max
    ) throws -> [Item] {
        let ids = Set(try store.itemsLinking(to: target).map(\.item))
        guard query.filters.isEmpty, query.sort == nil, search == nil else {
            let linking = try items(query, type: type, includeDeleted: false, search: search, limit: .max)
                .filter { ids.contains($0.id) }
            return Array(linking.prefix(limit))
        }
        // No query: the link index alone answers, by id, without reading every item.
        let peers = try store.peers()
        var linking: [Item] = []
        for id in ids.sorted() where linking.count < limit {
            guard let stored = try store.storedItem(id, withLocalEdits: true) else { continue }
            let item = Item(stored, sync: stored.localEdit.map { ItemSync(edit: $0, peers: peers) })
            if type == nil || item.type == type { linking.append(item) }
        }
        return linking
    }

    /// How many live items link to `target`.
    public func linkCount(to target: ItemID) throws -> Int { try store.itemsLinking(to: target).count }

    /// Every link of a live item whose target is deleted or missing here: `check --links`.
    public func brokenLinks() throws -> [(item: ItemID, field: FieldName, target: ItemID, state: LinkTarget)] {
        let dangling = try store.danglingLinks()
        let targets = try targets(dangling.map(\.target))
        return dangling.map { ($0.item, $0.field, $0.target, targets[$0.target] ?? .missing) }
    }

    /// `check --links --json`: `[{"id", "field", "target", "state": "deleted" or "missing"}]`.
    public static func brokenLinksJSONText(
        _ broken: [(item: ItemID, field: FieldName, target: ItemID, state: LinkTarget)]
    ) -> String {
        JSON.array(
            broken.map { link in
                let state: String = if case .deleted = link.state { "deleted" } else { "missing" }
                return .object([
                    ("id", .string(link.item.rawValue)), ("field", .string(link.field.rawValue)),
                    ("target", .string(link.target.rawValue)), ("state", .string(state)),
                ])
            }
        ).text
    }
}
