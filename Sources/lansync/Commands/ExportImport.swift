import ArgumentParser
import Foundation
import LansyncCore
import LansyncJSON
import LansyncStore

/// `lansync export [FILE]`
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every item (deleted ones too) as JSON Lines, sorted by id.",
        discussion: "Each line is what 'lansync get --json' prints. Without FILE, writes to standard output."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The file to write (replaced if it exists).") var file: String?

    func run() throws {
        let store = try data.directory.open()
        var lines: [UInt8] = []
        var out = Output()
        do {
            try store.forEachItem(includeDeleted: true) { item in
                if file == nil { out.line(Render.itemJSON(item)) } else {
                    lines.append(contentsOf: Render.itemJSON(item).utf8)
                    lines.append(0x0a)
                }
            }
        } catch { throw CLIError(error) }
        out.flush()
        if let file {
            guard FileManager.default.createFile(atPath: file, contents: Data(lines)) else {
                throw CLIError("cannot write \(file): check the path and its permissions")
            }
        }
    }
}

/// `lansync import [FILE]`
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Read items from JSON Lines (as 'export' writes them) as local edits.",
        discussion: """
            Each line is an object with "fields" and, optionally, "id", "type" and "deleted". A new id \
            creates the item; a known id gets the fields that differ (fields not named are left as \
            they are). All lines are one transaction: a malformed line stops the import with its line \
            number, and nothing from the input is imported. Without FILE, reads standard input.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The file to read.") var file: String?

    struct Line {
        let number: Int
        let id: ItemID?
        let type: String?
        let fields: [(FieldName, Value)]
        let deleted: Bool?
    }

    func run() throws {
        let input: Data
        if let file {
            guard let d = FileManager.default.contents(atPath: file) else { throw CLIError("cannot read \(file): check the path") }
            input = d
        } else {
            input = FileHandle.standardInput.readDataToEndOfFile()
        }
        let lines = try Self.parse(input)
        let store = try data.directory.open()
        let (edits, lineOfEdit) = try plan(lines, store: store)
        let showProgress = FileIO.stderrIsTerminal && edits.count >= 1000
        let started = Date()
        do {
            let dots = try store.apply(edits, wallMilliseconds: WallClock.milliseconds) { done in
                if showProgress, done % 1000 == 0 || done == edits.count { Self.progress(done, edits.count) }
            }
            if let first = dots.first { data.directory.noteNewWriter(store, issued: first) }
        } catch let StoreError.edit(error, index) {
            if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
            throw CLIError("line \(lineOfEdit[index]): \(error.message); nothing was imported")
        } catch {
            throw CLIError(error)
        }
        if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
        data.directory.nudgeNode()
        let seconds = Date().timeIntervalSince(started)
        FileHandle.standardError.write(Data("imported \(lines.count) line(s) as \(edits.count) edit(s) in \(String(format: "%.1f", seconds)) s\n".utf8))
    }

    static func progress(_ done: Int, _ total: Int) {
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        FileHandle.standardError.write(Data("\rimporting [\(bar)] \(done)/\(total)".utf8))
    }

    static let knownKeys: Set<String> = ["id", "type", "fields", "deleted", "conflicts"]

    static func parse(_ input: Data) throws -> [Line] {
        var lines: [Line] = []
        var number = 0
        for raw in input.split(separator: 0x0a, omittingEmptySubsequences: false) {
            number += 1
            var bytes = Array(raw)
            if bytes.last == 0x0d { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            func fail(_ why: String) -> CLIError { CLIError("line \(number): \(why); nothing was imported") }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw fail("not valid UTF-8") }
            let json: JSON
            do { json = try JSON(parsing: text) } catch { throw fail("not JSON (\(error.description))") }
            guard case .object(let members) = json else { throw fail("expected a JSON object like 'lansync get --json' prints") }
            if let unknown = members.first(where: { !knownKeys.contains($0.key) }) {
                throw fail("unknown key '\(unknown.key)' (expected id, type, fields, deleted)")
            }
            var id: ItemID?
            if let value = json["id"] {
                guard case .string(let s) = value else { throw fail("\"id\" must be a string") }
                do { id = try ItemID(s) } catch { throw fail(error.message) }
            }
            var type: String?
            if let value = json["type"] {
                guard case .string(let s) = value else { throw fail("\"type\" must be a string") }
                do { try ItemState.validate(type: s) } catch { throw fail(error.message) }
                type = s
            }
            var deleted: Bool?
            if let value = json["deleted"] {
                guard case .bool(let b) = value else { throw fail("\"deleted\" must be true or false") }
                deleted = b
            }
            var fields: [(FieldName, Value)] = []
            if let value = json["fields"] {
                guard case .object(let members) = value else { throw fail("\"fields\" must be an object") }
                for member in members {
                    let name: FieldName
                    do { name = try FieldName(member.key) } catch { throw fail(error.message) }
                    guard let v = member.value.value else { throw fail("field '\(member.key)' holds an object; values are null, bool, number, string or list") }
                    fields.append((name, v))
                }
            }
            lines.append(Line(number: number, id: id, type: type, fields: fields, deleted: deleted))
        }
        return lines
    }

    /// Turns lines into edits, comparing with what the replica (and earlier lines) hold, so that
    /// importing an export into its own replica changes nothing.
    func plan(_ lines: [Line], store: ReplicaStore) throws -> ([(ItemID, ItemEdit)], [Int]) {
        var edits: [(ItemID, ItemEdit)] = []
        var lineOfEdit: [Int] = []
        var known: [ItemID: ItemState] = [:]
        var rng = SystemRandomNumberGenerator()
        var planningCounter: UInt64 = 0
        let planner = NodeID(high: 0, low: 0)
        for line in lines {
            let id = line.id ?? ItemID.uuidV7(milliseconds: WallClock.milliseconds, using: &rng)
            var state: ItemState
            if let s = known[id] { state = s } else {
                do { state = try store.itemState(id) ?? ItemState(id: id) } catch { throw CLIError(error) }
            }
            var lineEdits: [ItemEdit] = []
            if !state.exists {
                lineEdits.append(.create(type: line.type ?? ItemState.defaultType, assignments: line.fields.map { .set($0.0, $0.1) }))
                if line.deleted == true { lineEdits.append(.delete) }
            } else {
                let shown = state.shownFields
                let assignments = line.fields.filter { shown[$0.0] != $0.1 || state.fields[$0.0]?.hasConflict == true }.map { Assignment.set($0.0, $0.1) }
                let retype = line.type.flatMap { $0 != state.type ? $0 : nil }
                let changes = !assignments.isEmpty || retype != nil
                // A line that says nothing of deletion must not bring a deleted item back (as 'set'
                // refuses to edit one): the line has to say which it means.
                if state.isDeleted, changes, line.deleted == nil {
                    throw CLIError("line \(line.number): item \(id) is deleted; add \"deleted\": false to restore it with these values, or \"deleted\": true to change it and keep it deleted; nothing was imported")
                }
                if state.isDeleted, line.deleted == false || changes { lineEdits.append(.restore) }
                if let retype { lineEdits.append(.retype(retype)) }
                if !assignments.isEmpty { lineEdits.append(.update(assignments)) }
                if line.deleted == true, !state.isDeleted || changes { lineEdits.append(.delete) }
            }
            for edit in lineEdits {
                planningCounter += 1
                do {
                    try state.apply(edit, dot: Dot(node: planner, counter: planningCounter), timestamp: HLCTimestamp(rawValue: planningCounter))
                } catch {
                    throw CLIError("line \(line.number): \(error.message); nothing was imported")
                }
                edits.append((id, edit))
                lineOfEdit.append(line.number)
            }
            known[id] = state
        }
        return (edits, lineOfEdit)
    }
}
