import ArgumentParser
import LansyncCore
import LansyncHost
import LansyncStore

/// Runs one local edit against the replica in the data directory.
func performEdit(_ edit: ItemEdit, on id: ItemID, in data: DataDirectoryOptions) throws {
    let directory = data.directory
    try directory.edit(edit, on: id, in: try directory.open())
}

/// The same, on the item an id the user typed names (the id, or a unique start of one).
@discardableResult
func performEdit(_ edit: ItemEdit, onTyped typed: String, in data: DataDirectoryOptions) throws -> ItemID {
    let directory = data.directory
    let store = try directory.open()
    let id = try AssignmentParser.resolveItemID(typed, in: store)
    try directory.edit(edit, on: id, in: store)
    return id
}

/// Prints the item as `get --json` does (after an edit with `--json`).
func printItemJSON(_ id: ItemID, in data: DataDirectoryOptions) throws {
    let store = try data.directory.open()
    guard let item = try store.storedItem(id, withLocalEdits: true) else { throw EditError.unknownItem(id) }
    print(item.jsonText(sync: try ItemSync.of(item, in: store)))
}

/// `lansync add`: creates an item and prints its id.
struct AddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Create an item and print its id.",
        discussion: """
            ASSIGNMENT is FIELD=VALUE, FIELD+=ELEM (add to a list) or FIELD-=ELEM (remove from a list). \
            VALUE and ELEM are JSON when valid JSON (3, 2.5, true, null, "text", ["a","b"]) and plain \
            text otherwise. Example: lansync add --type task title=Climb tags+=outdoor
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: "The item's type.") var type: String = ItemState.defaultType
    @Option(help: "The item's id (default: a new UUIDv7).") var id: String?
    @Argument(help: "Field assignments.") var assignments: [String] = []
    @Flag(help: "Print the new item as 'get --json' does, instead of its id.") var json = false

    func run() throws {
        let assignments = try self.assignments.map(AssignmentParser.parse)
        var rng = SystemRandomNumberGenerator()
        let itemID =
            try id.map(AssignmentParser.parseItemID) ?? ItemID.uuidV7(milliseconds: WallClock.milliseconds, using: &rng)
        try performEdit(.create(type: type, assignments: assignments), on: itemID, in: data)
        if json { try printItemJSON(itemID, in: data) } else { print(itemID.rawValue) }
    }
}

/// `lansync set ID ASSIGNMENT...`
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change fields of an item (one atomic edit).",
        discussion: "Example: lansync set ID title=\"Climb again\" tags+=indoor tags-=outdoor"
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "Field assignments: FIELD=VALUE, FIELD+=ELEM, FIELD-=ELEM.") var assignments: [String] = []
    @Flag(help: "Print the item after the edit, as 'get --json' does.") var json = false

    func run() throws {
        let assignments = try self.assignments.map(AssignmentParser.parse)
        let itemID = try performEdit(.update(assignments), onTyped: id, in: data)
        // `set ID type=note` is a natural try at changing the item's type: say what it did.
        for name in Set(assignments.map(\.field.rawValue)).intersection(["id", "type", "sync"]).sorted() {
            Terminal.note(
                "this set a field named '\(name)', which is not the item's own \(name) ('lansync get' shows them apart)"
                    + (name == "type" ? "; an item's type is given when it is made ('lansync add --type')" : "")
            )
        }
        if json { try printItemJSON(itemID, in: data) }
    }
}

/// `lansync rm ID`
struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete an item (it can be brought back with 'restore').",
        discussion:
            "A delete wins over edits made concurrently on other machines; those edits are kept and come back with 'lansync restore'."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String

    func run() throws {
        try performEdit(.delete, onTyped: id, in: data)
    }
}

/// `lansync restore ID`
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring back a deleted item, with every edit it received."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String

    func run() throws {
        try performEdit(.restore, onTyped: id, in: data)
    }
}

/// `lansync resolve ID FIELD VALUE`
struct ResolveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Close a field's open conflict with VALUE.",
        discussion:
            "VALUE is parsed like an assignment's value. 'lansync conflicts' lists open conflicts; a conflict on the item's type is listed as field _type and resolved the same way."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "The conflicted field.") var field: String
    @Argument(help: "The value to keep.") var value: String

    func run() throws {
        // A type conflict (two machines created one id with different types) is settled
        // through the reserved field `_type`.
        let name = field == FieldName.type.rawValue ? .type : try FieldName(field)
        try performEdit(
            .resolve(name, try AssignmentParser.parseValue(value, field: name.rawValue)),
            onTyped: id,
            in: data
        )
    }
}

/// `lansync revert ID FIELD --to ENTRY`
struct RevertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "Bring a field's past value back, as a new edit.",
        discussion: """
            ENTRY is a row of 'lansync history ID FIELD': its number in the # column (1 is the \
            newest), or its version NODE:COUNTER from 'history --json' (a unique start of NODE will \
            do). The value comes back as a new edit that syncs like any other; history keeps \
            everything. A list comes back whole from a write that replaced it; an addition or a \
            removal is not a value (add an element again with 'lansync set ID FIELD+=ELEM').
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "The field.") var field: String
    @Option(help: ArgumentHelp("The history entry to bring back.", valueName: "entry")) var to: String
    @Flag(help: "Print the item after the edit, as 'get --json' does.") var json = false

    func run() throws {
        let store = try data.directory.open()
        let itemID = try AssignmentParser.resolveItemID(id, in: store)
        let name = try FieldName(field)
        let entries = try store.history(itemID, field: name)
        guard !entries.isEmpty else {
            guard try store.itemState(itemID) != nil else { throw EditError.unknownItem(itemID) }
            throw CLIError("item \(itemID) has no field '\(name)': 'lansync get \(itemID)' shows its fields")
        }
        let entry = try Self.entry(to, in: entries, item: itemID)
        let value: Value
        switch entry.write {
        case .assign(let v), .overrule(let v, _, _):
            value = v
        case .list(let change) where change.replaced:
            value = .list(change.added)
        case .list:
            throw CLIError(
                "entry \(to) of \(itemID).\(name) added or removed list elements, which is no value to bring back: add an element again with 'lansync set \(itemID) \(name)+=ELEM'"
            )
        }
        try data.directory.edit(.update([.set(name, value)]), on: itemID, in: store)
        if json { try printItemJSON(itemID, in: data) }
    }

    /// The entry `text` names: a number of `history ID FIELD`'s # column, or NODE:COUNTER.
    static func entry(_ text: String, in entries: [HistoryEntry], item: ItemID) throws -> HistoryEntry {
        let hint = "'lansync history \(item) \(entries[0].field)' numbers them"
        if let number = Int(text) {
            guard number >= 1, number <= entries.count else {
                throw CLIError("no entry \(text): the field has \(entries.count) (\(hint))")
            }
            return entries[number - 1]
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let counter = UInt64(parts[1]) else {
            throw CLIError("'\(text)' names no history entry: give its number or NODE:COUNTER (\(hint))")
        }
        let matches = entries.filter { $0.dot.counter == counter && $0.dot.node.text.hasPrefix(parts[0].lowercased()) }
        guard matches.count == 1 else {
            throw CLIError(
                matches.isEmpty
                    ? "no entry \(text) in the field's history (\(hint))"
                    : "'\(parts[0])' starts several writers' ids: type more of it"
            )
        }
        return matches[0]
    }
}
