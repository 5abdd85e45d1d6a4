import ArgumentParser
import LansyncHost

/// Prints the item as `get --json` does (after an edit with `--json`).
func printItemJSON(_ id: ItemID, in replica: LocalReplica) throws {
    print(try replica.item(id).jsonText)
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
        let replica = try LocalReplica(data.directory)
        let itemID = try replica.add(type: type, id: try id.map(AssignmentParser.parseItemID), assignments: assignments)
        if json { try printItemJSON(itemID, in: replica) } else { print(itemID.rawValue) }
    }
}

/// `lansync set ID ASSIGNMENT...`
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change fields of an item, or its type (one atomic edit).",
        discussion: """
            Example: lansync set ID title="Climb again" tags+=indoor tags-=outdoor. With --type, the \
            item's type changes in the same edit (a type is a field like any other: concurrent changes \
            of it on two machines are a conflict both show). With --where instead of an ID, every live \
            item the query selects is changed in one transaction, all or none (more than one asks \
            first, or needs --yes): lansync set --where 'status = done' archived=true.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it (none with --where).") var id: String?
    @Argument(help: "Field assignments: FIELD=VALUE, FIELD+=ELEM, FIELD-=ELEM.") var assignments: [String] = []
    @Option(help: "Change the item's type to TYPE.") var type: String?
    @OptionGroup var bulk: BulkOptions
    @Flag(help: "Print the item after the edit, as 'get --json' does (with --where: what changed).") var json = false

    func validate() throws {
        if !bulk.isBulk, id == nil {
            throw ValidationError("give the item's ID, or --where to change every item it selects")
        }
    }

    func run() throws {
        let replica = try LocalReplica(data.directory)
        if bulk.isBulk {
            // No ID: every positional is an assignment.
            let all = try ((id.map { [$0] } ?? []) + self.assignments).map(AssignmentParser.parse)
            if all.isEmpty, type == nil { throw EditError.noAssignments }
            return try bulk.run(.update(all, type: type), in: replica, verb: "changed", json: json)
        }
        let assignments = try self.assignments.map(AssignmentParser.parse)
        let id = self.id ?? ""
        let edit: ItemEdit = type.map { .retype($0, assignments: assignments) } ?? .update(assignments)
        let itemID = try replica.edit(edit, onTyped: id)
        // `set ID type=note` is a natural try at changing the item's type: say what it did.
        for name in Set(assignments.map(\.field.rawValue)).intersection(["id", "type", "sync"]).sorted() {
            Terminal.note(
                "this set a field named '\(name)', which is not the item's own \(name) ('lansync get' shows them apart)"
                    + (name == "type" ? "; to change the item's type, use 'lansync set ID --type TYPE'" : "")
            )
        }
        if json { try printItemJSON(itemID, in: replica) }
    }
}

/// `lansync rm ID`
struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete an item (it can be brought back with 'restore').",
        discussion: """
            A delete wins over edits made concurrently on other machines; those edits are kept and come \
            back with 'lansync restore'. With --where instead of an ID, every live item the query selects \
            is deleted in one transaction (more than one asks first, or needs --yes).
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it (none with --where).") var id: String?
    @OptionGroup var bulk: BulkOptions
    @Flag(help: "With --where, print what changed as JSON.") var json = false

    func validate() throws {
        if bulk.isBulk == (id != nil) {
            throw ValidationError("give the item's ID, or --where COND for every item it selects (not both)")
        }
    }

    func run() throws {
        let replica = try LocalReplica(data.directory)
        if bulk.isBulk { return try bulk.run(.delete, in: replica, verb: "deleted", json: json) }
        let deleted = try replica.edit(.delete, onTyped: id ?? "")
        let linking = try replica.linkCount(to: deleted)
        if linking > 0 {
            Terminal.note(
                "\(linking) item(s) link to \(deleted.rawValue), which is now deleted: 'lansync list --links-to \(deleted.rawValue)' shows them"
            )
        }
    }
}

/// `lansync restore ID`
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring back a deleted item, with every edit it received.",
        discussion: """
            With --where instead of an ID, every deleted item the query selects comes back in one \
            transaction (more than one asks first, or needs --yes).
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it (none with --where).") var id: String?
    @OptionGroup var bulk: BulkOptions
    @Flag(help: "With --where, print what changed as JSON.") var json = false

    func validate() throws {
        if bulk.isBulk == (id != nil) {
            throw ValidationError("give the item's ID, or --where COND for every item it selects (not both)")
        }
    }

    func run() throws {
        let replica = try LocalReplica(data.directory)
        if bulk.isBulk { return try bulk.run(.restore, in: replica, verb: "restored", json: json) }
        try replica.edit(.restore, onTyped: id ?? "")
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
        try LocalReplica(data.directory).edit(
            .resolve(name, try AssignmentParser.parseValue(value, field: name.rawValue)),
            onTyped: id
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
            removal is not a value (add an element again with 'lansync set ID FIELD+=ELEM'). FIELD \
            _type brings a past type back.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "The field.") var field: String
    @Option(help: ArgumentHelp("The history entry to bring back.", valueName: "entry")) var to: String
    @Flag(help: "Print the item after the edit, as 'get --json' does.") var json = false

    func run() throws {
        let replica = try LocalReplica(data.directory)
        let name = field == FieldName.type.rawValue ? FieldName.type : try FieldName(field)
        let (itemID, changed) = try replica.revert(id, field: name, to: to)
        if json { return try printItemJSON(itemID, in: replica) }
        if !changed { print("\(itemID).\(name) shows that value already: nothing was changed") }
    }
}

/// `lansync unset ID FIELD...`
struct UnsetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unset",
        abstract: "Remove fields of an item (one atomic edit).",
        discussion: """
            A removal is a write of "absent" that syncs and merges like any other: a field removed on \
            one machine and set on another at the same time is a conflict both show, settled with \
            'lansync resolve ID FIELD VALUE' (keep a value) or another 'lansync unset' (remove it). \
            'set ID FIELD=null' is different: it keeps the field, with the value null. History keeps \
            the removed value; 'lansync revert' brings it back.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The item's id, or a unique start of it.") var id: String
    @Argument(help: "The fields to remove.") var fields: [String]
    @Flag(help: "Print the item after the edit, as 'get --json' does.") var json = false

    func run() throws {
        let names = try fields.map { try FieldName($0) }
        let replica = try LocalReplica(data.directory)
        let itemID = try replica.edit(.update(names.map(Assignment.unset)), onTyped: id)
        if json { try printItemJSON(itemID, in: replica) }
    }
}
