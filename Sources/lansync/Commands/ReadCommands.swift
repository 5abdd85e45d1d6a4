import ArgumentParser
import LansyncCore
import LansyncHost
import LansyncJSON
import LansyncStore

/// `lansync get ID [--json]`
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show an item.")

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let store = try data.directory.open()
        let itemID = try AssignmentParser.resolveItemID(id, in: store)
        guard let item = try store.storedItem(itemID) else { throw EditError.unknownItem(itemID) }
        if json {
            print(item.jsonText)
            return
        }
        var rows: [[String]] = [["id", item.id], ["type", item.type]]
        if item.deleted { rows.append(["deleted", "yes ('lansync restore \(item.id)' brings it back)"]) }
        for field in item.fields {
            let mark = item.conflicts.contains(field.name) ? "  [conflict]" : ""
            rows.append([field.name, Render.human(json: field.json, width: 200) + mark])
        }
        print(Render.table(["FIELD", "VALUE"], rows))
        if !item.conflicts.isEmpty {
            print("\n\(item.conflicts.count) open conflict(s): 'lansync conflicts' lists the values")
        }
    }
}

/// `lansync list [--type TYPE] [--deleted] [--json]`
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List items, sorted by id.")

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: "Only items of this type.") var type: String?
    @Flag(help: "Include deleted items.") var deleted = false
    @Flag(help: "Print a JSON array.") var json = false

    func run() throws {
        let store = try data.directory.open()
        var out = Output()
        if json {
            var first = true
            out.line("[")
            try store.forEachItem(type: type, includeDeleted: deleted) { item in
                out.line((first ? "" : ",") + item.jsonText)
                first = false
            }
            out.line("]")
            out.flush()
            return
        }
        var rows: [[String]] = []
        try store.forEachItem(type: type, includeDeleted: deleted) { item in
            let fields = item.fields.map { f in
                f.name + (item.conflicts.contains(f.name) ? "!" : "") + "=" + Render.human(json: f.json, width: 24)
            }.joined(separator: " ")
            rows.append([item.id, item.type + (item.deleted ? " (deleted)" : ""), fields])
        }
        out.line(Render.table(["ID", "TYPE", "FIELDS"], rows))
        out.line(
            "\(rows.count) item(s)"
                + (rows.contains { $0[2].contains("!=") } ? "; '!' marks a field with an open conflict" : "")
        )
        out.flush()
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
    @Flag(help: "Include the reserved fields lansync writes (_type, _deleted).") var all = false

    func run() throws {
        let name = field.map { FieldName(unchecked: $0) }
        let store = try data.directory.open()
        let itemID = try AssignmentParser.resolveItemID(id, in: store)
        guard let state = try store.itemState(itemID) else { throw EditError.unknownItem(itemID) }
        // A field named on the command line is shown even if reserved.
        let entries = try store.history(itemID, field: name).filter { all || name != nil || !$0.field.isReserved }
        if let name, entries.isEmpty { throw CLIError("item \(itemID) has no field '\(name)'") }
        if json {
            print(entries.jsonText)
            return
        }
        let rows = entries.map { e in
            [
                Render.time(e.timestamp), e.field.rawValue, Render.writer(e.dot, name: e.writerName),
                Self.mark(e, list: state.fields[e.field]?.listValue ?? []), Render.change(e.write),
            ]
        }
        print(Render.table(["TIME", "FIELD", "WRITER", "STATE", "CHANGE"], rows))
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
        let store = try data.directory.open()
        let conflicts = try store.conflicts()
        if json {
            print(conflicts.jsonText)
            return
        }
        if conflicts.isEmpty {
            print("no open conflicts")
            return
        }
        let rows = conflicts.map { c in
            [
                c.item.rawValue, c.field.rawValue,
                c.values.map { ($0 == c.shown ? "*" : "") + Render.human(json: $0.jsonText, width: 30) }.joined(
                    separator: " | "
                ),
            ]
        }
        print(Render.table(["ID", "FIELD", "VALUES (* shown)"], rows))
    }
}
