public import LansyncReplica
public import LansyncStore

/// A machine's replica as its front ends use it: every edit, read, query and maintenance task of
/// the CLI (and, through the same methods, of the local API and the web page) goes through here,
/// so they all do the same thing the same way.
///
/// Guarantees, for every front end alike: an edit is one transaction; a running node on the
/// directory is told at once so that it pushes the change; a user is told when an edit had to
/// start a new writer because the replica was found rolled back; an id may be given whole or as
/// a unique start; results are typed (``Item``), and their JSON forms are made in one place.
public struct LocalReplica: Sendable {
    public let directory: DataDirectory
    let store: ReplicaStore

    /// Opens the replica in `directory` (a copied directory first takes a new identity), for a
    /// command: one connection, which writes nothing until asked to.
    public init(_ directory: DataDirectory) throws {
        self.directory = directory
        store = try directory.open(.one)
    }

    /// The replica a running node already holds open.
    public init(_ directory: DataDirectory, store: ReplicaStore) {
        self.directory = directory
        self.store = store
    }

    /// The replica file's path.
    public var path: String { store.path }

    /// The item an id the user typed names: the id itself, or the one item whose id starts with it.
    public func resolve(_ typed: String) throws -> ItemID {
        try AssignmentParser.resolveItemID(typed, in: store)
    }

    // MARK: Edits

    /// Performs one edit (one transaction) and tells a running node; returns its dot.
    @discardableResult
    public func edit(_ edit: ItemEdit, on id: ItemID) throws -> Dot {
        try directory.edit(try resolvingLinks(edit), on: id, in: store)
    }

    /// Creates an item of `type` with `assignments`; its id is `id`, else a new UUIDv7.
    public func add(type: String, id: ItemID?, assignments: [Assignment]) throws -> ItemID {
        var rng = SystemRandomNumberGenerator()
        let itemID = id ?? ItemID.uuidV7(milliseconds: WallClock.milliseconds, using: &rng)
        try edit(.create(type: type, assignments: assignments), on: itemID)
        return itemID
    }

    /// Performs `edit` on the item `typed` names; returns its id.
    @discardableResult
    public func edit(_ edit: ItemEdit, onTyped typed: String) throws -> ItemID {
        let id = try resolve(typed)
        try self.edit(edit, on: id)
        return id
    }

    /// Brings back the value `entry` of a field's history as a new edit: a number of `history`'s
    /// `#` column (1 is the newest) or `NODE:COUNTER` (a unique start of NODE will do). A field
    /// that shows that value already, with no conflict open, is left as it is (`changed` false):
    /// a second version of the same value would only lengthen its history.
    @discardableResult
    public func revert(_ typed: String, field: FieldName, to entry: String) throws -> (id: ItemID, changed: Bool) {
        let id = try resolve(typed)
        let entries = try store.history(id, field: field)
        guard !entries.isEmpty else {
            guard try store.itemState(id) != nil else { throw EditError.unknownItem(id) }
            throw HostError("item \(id) has no field '\(field)': 'lansync get \(id)' shows its fields")
        }
        let chosen = try HistoryEntry.named(entry, in: entries, item: id)
        let value: Value
        switch chosen.write {
        case .assign(let v), .overrule(let v, _, _):
            value = v
        case .list(let change) where change.replaced:
            value = .list(change.added)
        case .list:
            throw HostError(
                "entry \(entry) of \(id).\(field) added or removed list elements, which is no value to bring back: add an element again with 'lansync set \(id) \(field)+=ELEM'"
            )
        case .unset:
            guard field != .type else { throw HostError("entry \(entry) of \(id).\(field) is no type") }
            if try shows(id, field, nil) { return (id, false) }
            try edit(.update([.unset(field)]), on: id)
            return (id, true)
        }
        if try shows(id, field, value) { return (id, false) }
        if field == .type {
            guard case .string(let type) = value else {
                throw HostError("entry \(entry) of \(id).\(field) is no type: a type is text")
            }
            try edit(.retype(type), on: id)
        } else {
            try edit(.update([.set(field, value)]), on: id)
        }
        return (id, true)
    }

    /// True if the live item `id` shows `value` in `field` (nil: has no such field) with no
    /// conflict open there.
    private func shows(_ id: ItemID, _ field: FieldName, _ value: Value?) throws -> Bool {
        guard let item = try store.storedItem(id, withLocalEdits: true), !item.deleted,
            !item.conflicts.contains(field)
        else { return false }
        if field == .type { return value == .string(item.type) }
        return item.fields.first { $0.name == field }?.value == value
    }

    // MARK: Reading

    /// The item with this id, with its sync state.
    public func item(_ id: ItemID) throws -> Item {
        guard let stored = try store.storedItem(id, withLocalEdits: true) else { throw EditError.unknownItem(id) }
        return Item(stored, sync: try ItemSync.of(stored, in: store))
    }

    /// The item an id the user typed names.
    public func item(typed: String) throws -> Item { try item(try resolve(typed)) }

    /// Calls `body` with every item (of `type`, deleted ones with `includeDeleted`), sorted by id,
    /// each with its sync state, reading in one snapshot without holding them all in memory.
    public func forEachItem(
        type: String? = nil,
        includeDeleted: Bool = false,
        _ body: (Item) throws -> Void
    ) throws {
        let peers = try store.peers()
        try store.forEachItem(type: type, includeDeleted: includeDeleted, withLocalEdits: true) { stored in
            try body(Item(stored, sync: stored.localEdit.map { ItemSync(edit: $0, peers: peers) }))
        }
    }

    /// The items `query` selects (of `type`, deleted ones with `includeDeleted`, those `search`
    /// matches), in its order, at most `limit`, each with its sync state.
    public func items(
        _ query: ItemQuery,
        type: String? = nil,
        includeDeleted: Bool = false,
        search: ItemSearch? = nil,
        limit: Int = .max
    ) throws -> [Item] {
        let page = try store.query(
            query,
            type: type,
            includeDeleted: includeDeleted,
            search: search,
            limit: limit,
            withLocalEdits: true
        )
        let peers = try store.peers()
        return page.items.map { Item($0, sync: $0.localEdit.map { ItemSync(edit: $0, peers: peers) }) }
    }

    /// One page of items, sorted by id: at most `limit`, with ids after `after` (the last id of
    /// the page before); a page shorter than `limit` is the last.
    public func page(
        type: String? = nil,
        includeDeleted: Bool = false,
        after: ItemID? = nil,
        limit: Int
    ) throws -> [Item] {
        let stored = try store.items(
            type: type,
            includeDeleted: includeDeleted,
            after: after,
            limit: limit,
            withLocalEdits: true
        )
        let peers = try store.peers()
        return stored.map { Item($0, sync: $0.localEdit.map { ItemSync(edit: $0, peers: peers) }) }
    }

    /// One page of what `query` selects (and `search` matches), and the opaque cursor of the
    /// next page (nil after the last); `after` is the cursor a page before gave.
    public func page(
        of query: ItemQuery,
        type: String? = nil,
        includeDeleted: Bool = false,
        search: ItemSearch? = nil,
        limit: Int,
        after: String?
    ) throws -> (items: [Item], next: String?) {
        let result = try store.query(
            query,
            type: type,
            includeDeleted: includeDeleted,
            search: search,
            limit: limit,
            after: after,
            withLocalEdits: true
        )
        let peers = try store.peers()
        return (result.items.map { Item($0, sync: $0.localEdit.map { ItemSync(edit: $0, peers: peers) }) }, result.next)
    }

    /// Every kept version of the fields of the item `id` (or of one field), newest first; the
    /// item must exist (never created, or only a delete heard of, is unknown).
    public func history(of id: ItemID, field: FieldName? = nil) throws -> [HistoryEntry] {
        try requireExisting(id)
        return try store.history(id, field: field)
    }

    /// Throws ``EditError/unknownItem(_:)`` unless the item `id` exists (created, and not only a
    /// delete heard of).
    public func requireExisting(_ id: ItemID) throws {
        guard try store.itemState(id)?.exists == true else { throw EditError.unknownItem(id) }
    }

    /// How many items of each type there are (live, deleted), and the fields indexed for
    /// queries: what the web page's filter and sort offer.
    public func summary() throws -> (types: [(type: String, live: Int, deleted: Int)], indexed: [FieldName]) {
        (try store.typeCounts(), try store.indexedFieldNames())
    }

    /// How `query` is answered: which index it reads, if any.
    public func plan(of query: ItemQuery) throws -> String { try store.queryPlan(query) }

    /// Every item's id, sorted (deleted ones too).
    public func itemIDs() throws -> [ItemID] { try store.itemIDs(matching: "", limit: .max) }

    /// Every kept version of the fields of the item `typed` names (or of one field), newest
    /// first; and the item's state, which says which list elements a version left in.
    public func history(
        _ typed: String,
        field: FieldName? = nil
    ) throws -> (id: ItemID, state: ItemState, entries: [HistoryEntry]) {
        let id = try resolve(typed)
        guard let state = try store.itemState(id) else { throw EditError.unknownItem(id) }
        return (id, state, try store.history(id, field: field))
    }

    /// The open conflicts, and the names of the nodes whose versions they hold.
    public func conflicts() throws -> (conflicts: [FieldConflict], names: [NodeID: String]) {
        (try store.conflicts(), try store.nodeNames())
    }

    /// Writes every item (deleted ones too) as JSON Lines, sorted by id, to `line` a line at a time.
    public func export(_ line: (String) throws -> Void) throws {
        try store.forEachItem(includeDeleted: true) { try line($0.jsonText) }
    }

    // MARK: The change feed

    /// The feed's latest sequence number: a reader that starts from it sees every later change.
    public func latestChange() throws -> UInt64 { try store.latestChangeSeq() }

    /// A page of the feed after `since`, and where the next one starts.
    public func changes(
        since: UInt64,
        limit: Int = 1000,
        type: String? = nil,
        item: ItemID? = nil,
        field: FieldName? = nil
    ) throws -> (entries: [ChangeEntry], last: UInt64) {
        try store.changePage(since: since, limit: limit, type: type, item: item, field: field)
    }

    // MARK: Indexes

    /// The indexed fields, with how many items hold each.
    public func indexedFields() throws -> [(field: FieldName, items: Int)] { try store.indexedFields() }

    /// Indexes `field` for queries.
    public func addIndex(_ field: FieldName) throws { try store.addIndex(field) }

    /// Stops indexing `field`; false if it was not indexed.
    public func dropIndex(_ field: FieldName) throws -> Bool { try store.dropIndex(field) }

    // MARK: Checks

    /// Every row read as lansync reads it (`lansync check`).
    public func check() throws -> DamageReport { try store.fullCheck() }

    /// The status: the running node's, else what the replica alone says
    /// (``DataDirectory/status(of:waitingSeconds:)``).
    public func status(waitingSeconds: Int = StatusWait.seconds) throws -> NodeStatus {
        try directory.status(of: store, waitingSeconds: waitingSeconds)
    }
}

extension HistoryEntry {
    /// The entry `text` names among `entries` (one field's, newest first): its number in
    /// `history`'s `#` column, or `NODE:COUNTER`.
    static func named(_ text: String, in entries: [HistoryEntry], item: ItemID) throws -> HistoryEntry {
        let hint = "'lansync history \(item) \(entries[0].field)' numbers them"
        if let number = Int(text) {
            guard number >= 1, number <= entries.count else {
                throw HostError("no entry \(text): the field has \(entries.count) (\(hint))")
            }
            return entries[number - 1]
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let counter = UInt64(parts[1]) else {
            throw HostError("'\(text)' names no history entry: give its number or NODE:COUNTER (\(hint))")
        }
        let matches = entries.filter { $0.dot.counter == counter && $0.dot.node.text.hasPrefix(parts[0].lowercased()) }
        guard matches.count == 1 else {
            throw HostError(
                matches.isEmpty
                    ? "no entry \(text) in the field's history (\(hint))"
                    : "'\(parts[0])' starts several writers' ids: type more of it"
            )
        }
        return matches[0]
    }
}
