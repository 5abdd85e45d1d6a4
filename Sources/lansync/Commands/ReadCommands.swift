import ArgumentParser
import Foundation
import LansyncHost

/// `lansync get ID [--json]`
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show an item.")

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let replica = try LocalReplica(data.directory)
        let item = try replica.item(typed: id)
        if json {
            print(item.jsonText)
            return
        }
        // The item's own id, type and state come first, apart from its fields, each line saying
        // what it is: a field named "id", "type" or "sync" (any member may add one) shows only in
        // the table of fields below, never as the item's own.
        var about = ["item \(item.id)", "type \(item.type)"]
        if item.deleted { about.append("deleted: 'lansync restore \(item.id)' brings it back") }
        if let sync = item.sync { about.append("sync \(Render.sync(sync))") }
        print(about.joined(separator: "\n"))
        print()
        if item.fields.isEmpty {
            print("(no fields)")
        } else {
            // A link shows where it points: the target's title, and whether it is gone.
            let targets = try replica.targets(item.fields.flatMap(\.value.links))
            let rows = item.fields.map { field in
                [
                    field.name.rawValue,
                    Render.human(field.value, width: 200) + Self.describe(field.value, targets)
                        + (item.conflicts.contains(field.name) ? "  [conflict]" : ""),
                ]
            }
            print(Render.table(["FIELD", "VALUE"], rows))
        }
        if !item.conflicts.isEmpty {
            print("\n\(item.conflicts.count) open conflict(s): 'lansync conflicts' lists the values")
        }
        let linking = try replica.linkCount(to: item.id)
        if linking > 0 {
            print("\n\(linking) item(s) link here: 'lansync list --links-to \(item.id)' shows them")
        }
    }

    /// What a link points at, after the value: `  → Title`, `  → (deleted) Title`, `  → (missing)`.
    static func describe(_ value: Value, _ targets: [ItemID: LocalReplica.LinkTarget]) -> String {
        guard case .ref(let id) = value, let target = targets[id] else { return "" }
        switch target {
        case .live(let title): return "  → " + (title ?? "(no title)")
        case .deleted(let title): return "  → (deleted) " + (title ?? "")
        case .missing: return "  → (missing: no such item here)"
        }
    }
}

/// `lansync list [--type TYPE] [--deleted] [--fields F,G] [--wide] [--json]`
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List items, sorted by id, or those a query selects, in its order.",
        discussion: """
            Shows each item's title (or name) first, then its other fields, cut to the terminal's \
            width (COLUMNS, when set). --fields shows the named fields as columns, --wide cuts \
            nothing, and output to a pipe is never cut.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: "Only items of this type.") var type: String?
    @Flag(help: "Include deleted items.") var deleted = false
    @Option(help: ArgumentHelp("Show these fields as columns, in this order.", valueName: "field,field..."))
    var fields: String?
    @Flag(help: "Show every value whole, however wide the terminal.") var wide = false
    @Flag(help: "Only items whose latest edit here no other machine is known to have (DIRTY).") var dirty = false
    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "Only items whose field passes (repeatable, all must): FIELD=VALUE, !=, <, <=, >, >=, 'FIELD contains ELEM', 'FIELD prefix TEXT', 'FIELD exists', 'FIELD missing'.",
            valueName: "condition"
        )
    )
    var conditions: [String] = []
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Order by this field's value (-FIELD: descending), then by id.", valueName: "[-]field")
    )
    var sort: String?
    @Option(help: "At most this many items.") var limit: Int?
    @Flag(help: "Say how the query is answered (which index, if any) instead of listing.") var explain = false
    @Option(
        name: .customLong("links-to"),
        help: ArgumentHelp(
            "Only the items with a field that links to this item (a unique start of its id will do).",
            valueName: "id"
        )
    )
    var linksTo: String?
    @Option(
        help: ArgumentHelp(
            "Only the items that hold every one of these words (any case) in their id, type, field names or values.",
            valueName: "words"
        )
    )
    var search: String?
    @Flag(help: "Print a JSON array.") var json = false

    /// The fields people name an item by: shown first, in a column of their own.
    static let titleFields = ["title", "name"]

    /// Each id's shortest start that no other id shares, at least 8 characters (as git shortens
    /// hashes); `ids` sorted. An id that starts another is shown whole (an exact id always wins).
    static func shortestUniqueStarts(_ ids: [ItemID]) -> [String: String] {
        let texts = ids.map { Array($0.rawValue.utf8) }
        func common(_ a: [UInt8], _ b: [UInt8]) -> Int { zip(a, b).prefix { $0 == $1 }.count }
        var result: [String: String] = [:]
        for (i, id) in texts.enumerated() {
            var needed = 0
            if i > 0 { needed = max(needed, common(id, texts[i - 1]) + 1) }
            if i + 1 < texts.count { needed = max(needed, common(id, texts[i + 1]) + 1) }
            let length = min(id.count, max(8, needed))
            result[ids[i].rawValue] = String(decoding: id.prefix(length), as: UTF8.self)
        }
        return result
    }

    func validate() throws {
        if json, fields != nil || wide { throw ValidationError("--json prints every field; drop --fields and --wide") }
        if let search, ItemSearch(search) == nil {
            throw ValidationError("--search needs at least one word; drop it to list every item")
        }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let replica = try LocalReplica(data.directory)
        let words = search.flatMap(ItemSearch.init)
        // With a query, the items it selects in its order; else every item, by id, as it streams.
        let query = try replica.resolvingLinks(
            ItemQuery(filters: try conditions.map(QueryParser.filter), sort: try sort.map(QueryParser.sort))
        )
        if explain {
            print(try replica.plan(of: query))
            return
        }
        let selected = try selection(replica, query, words: words)
        func forEachItem(_ body: (Item) throws -> Void) throws {
            if let selected {
                try selected.forEach(body)
            } else {
                try replica.forEachItem(type: type, includeDeleted: deleted, body)
            }
        }
        func listed(_ item: Item) -> Bool { !dirty || item.sync?.state == .dirty }
        var out = Output()
        if json {
            var first = true
            out.line("[")
            try forEachItem { item in
                guard listed(item) else { return }
                out.line((first ? "" : ",") + item.jsonText)
                first = false
            }
            out.line("]")
            out.flush()
            return
        }
        let chosen = fields.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let width = wide ? nil : Terminal.width
        // Within a terminal's width an id shows as its shortest unique start (every command that
        // takes an id takes it); to a pipe, or with --wide, whole.
        let shortIDs = width == nil ? [:] : Self.shortestUniqueStarts(try replica.itemIDs())
        var items: [Item] = []
        try forEachItem { if listed($0) { items.append($0) } }
        let (header, rows) = table(items, chosen: chosen, shortIDs: shortIDs)
        out.line(Render.table(header, rows, width: width))
        out.line(
            "\(rows.count) item(s)"
                + (items.contains { !$0.conflicts.isEmpty } ? "; '!' marks a field with an open conflict" : "")
        )
        out.flush()
    }
}

extension ListCommand {
    /// The items a query, a search, a limit or `--links-to` select, in their order; nil when
    /// none is given (every item is listed, by id, as it streams).
    func selection(_ replica: LocalReplica, _ query: ItemQuery, words: ItemSearch?) throws -> [Item]? {
        if let linksTo {
            return try replica.items(
                linkingTo: try replica.resolve(linksTo),
                query,
                type: type,
                search: words,
                limit: limit ?? .max
            )
        }
        guard !conditions.isEmpty || sort != nil || limit != nil || words != nil else { return nil }
        return try replica.items(query, type: type, includeDeleted: deleted, search: words, limit: limit ?? .max)
    }

    /// The table's header and rows: the fields asked for (`--fields`), else a title column when
    /// any item has one and the other fields after it, by name.
    func table(_ items: [Item], chosen: [String]?, shortIDs: [String: String]) -> (header: [String], rows: [[String]]) {
        func value(_ item: Item, _ name: String) -> Value? { item.value(of: FieldName(unchecked: name)) }
        func shown(_ item: Item, _ name: String) -> String {
            guard let value = value(item, name) else { return "" }
            return Render.human(value, width: wide ? .max : 60)
                + (item.conflicts.contains(FieldName(unchecked: name)) ? " !" : "")
        }
        func typeColumn(_ item: Item) -> String { item.type + (item.deleted ? " (deleted)" : "") }
        if let chosen {
            return (
                ["ID", "TYPE"] + chosen.map { $0.uppercased() },
                items.map { item in
                    [shortIDs[item.id.rawValue] ?? item.id.rawValue, typeColumn(item)] + chosen.map { shown(item, $0) }
                }
            )
        }
        let titled = items.contains { item in Self.titleFields.contains { value(item, $0) != nil } }
        let rows = items.map { item in
            let title = Self.titleFields.first { value(item, $0) != nil }
            let rest = item.fields.filter { $0.name.rawValue != title }.map { field in
                field.name.rawValue + (item.conflicts.contains(field.name) ? "!" : "") + "="
                    + Render.human(field.value, width: wide ? .max : 24)
            }
            return [shortIDs[item.id.rawValue] ?? item.id.rawValue, typeColumn(item)]
                + (titled ? [title.map { shown(item, $0) } ?? ""] : [])
                + [rest.joined(separator: " ")]
        }
        return (["ID", "TYPE"] + (titled ? ["TITLE"] : []) + ["FIELDS"], rows)
    }
}

/// `lansync history ID [FIELD] [--json]`
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show every kept version of an item's fields, newest first, including conflict losers."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "Only this field.") var field: String?
    @Flag(help: "Print a JSON array.") var json = false
    @Flag(help: "Include the tombstone lansync writes on rm and restore (_deleted).") var all = false

    func run() throws {
        let name = field.map { FieldName(unchecked: $0) }
        let (itemID, state, history) = try LocalReplica(data.directory).history(id, field: name)
        // A field named on the command line is shown even if reserved; the type is a field users
        // change ('set --type'), the tombstone one they do not write as a value.
        let entries = history.filter { all || name != nil || !$0.field.isReserved || $0.field == .type }
        if let name, entries.isEmpty { throw CLIError("item \(itemID) has no field '\(name)'") }
        if json {
            print(entries.jsonText)
            return
        }
        // Each entry's number among its field's, newest first: what 'revert --to' takes.
        var numbers: [FieldName: Int] = [:]
        let rows = entries.map { e in
            numbers[e.field, default: 0] += 1
            return [
                String(numbers[e.field]!), Render.time(e.timestamp), e.field.rawValue,
                Render.writer(e.dot, name: e.writerName), e.isSigned ? "signed" : "unverified",
                Self.mark(e, list: state.fields[e.field]?.listValue ?? []), Render.change(e.write),
            ]
        }
        print(Render.table(["#", "TIME", "FIELD", "WRITER", "SIGNED", "STATE", "CHANGE"], rows))
    }

    /// `live` for a version the field shows (or a conflict sibling); for a superseded list write
    /// whose additions are still in the list, `in list` (a later write superseded the version,
    /// not the element); else `old`.
    static func mark(_ e: HistoryEntry, list: [Value]) -> String {
        if e.isLive { return "live" }
        if case .list(let change) = e.write, change.added.contains(where: list.contains) { return "in list" }
        return "old"
    }
}

/// `lansync conflicts [--json]`
struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List fields whose concurrent edits left different values.",
        discussion: "Settle one with 'lansync resolve ID FIELD VALUE' or any later 'lansync set'."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Print a JSON array.") var json = false

    func run() throws {
        let (conflicts, names) = try LocalReplica(data.directory).conflicts()
        if json {
            print(conflicts.jsonText(names: names))
            return
        }
        if conflicts.isEmpty {
            print("no open conflicts")
            return
        }
        // One row per concurrent version, each value whole (it is what differs), the shown one
        // marked; the item and field only on a conflict's first row.
        var rows: [[String]] = []
        for c in conflicts {
            for (i, version) in c.versions.enumerated() {
                rows.append([
                    i == 0 ? c.item.rawValue : "", i == 0 ? c.field.rawValue : "",
                    Render.writer(version.dot, name: names[version.dot.node]), Render.time(version.timestamp),
                    (i == 0 ? "* " : "  ")
                        + (c.value(of: version).map { Render.human($0, width: .max) } ?? "(removed)"),
                ])
            }
        }
        print(Render.table(["ID", "FIELD", "WRITER", "TIME", "VALUE (* shown)"], rows, width: nil))
        print(
            "\(conflicts.count) open conflict(s): 'lansync resolve ID FIELD VALUE' settles one ('lansync unset ID FIELD' by removing the field)"
        )
    }
}
