public import Foundation
public import LansyncCore
import LansyncJSON
public import LansyncStore

/// An import of JSON Lines (as `export` writes them) planned as local edits: each line is checked,
/// then compared with what the replica (and earlier lines) hold, so that importing an export into
/// its own replica changes nothing. Planning changes nothing; ``DataDirectory/importItems(_:into:progress:)``
/// applies the plan in one transaction.
public struct ImportPlan: Sendable {
    /// One line of input, checked.
    struct Line: Sendable {
        let number: Int
        let id: ItemID?
        let type: String?
        let fields: [(FieldName, Value)]
        let deleted: Bool?
    }

    /// How many non-blank lines the input had.
    public let lineCount: Int
    /// The edits, in order, and the input line each came from.
    public let edits: [(ItemID, ItemEdit)]
    let lineOfEdit: [Int]

    static let knownKeys: Set<String> = ["id", "type", "fields", "deleted", "conflicts"]

    /// Plans `input` against `store`. Throws ``HostError`` naming the first bad line.
    public init(input: Data, store: ReplicaStore, wallMilliseconds: UInt64) throws {
        let lines = try Self.parse(input)
        lineCount = lines.count
        (edits, lineOfEdit) = try Self.plan(lines, store: store, wallMilliseconds: wallMilliseconds)
    }

    static func parse(_ input: Data) throws(HostError) -> [Line] {
        var lines: [Line] = []
        var number = 0
        for raw in input.split(separator: 0x0a, omittingEmptySubsequences: false) {
            number += 1
            var bytes = Array(raw)
            if bytes.last == 0x0d { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            lines.append(try parseLine(bytes, number: number))
        }
        return lines
    }

    static func failure(_ number: Int, _ why: String) -> HostError {
        HostError("line \(number): \(why); nothing was imported")
    }

    static func parseLine(_ bytes: [UInt8], number: Int) throws(HostError) -> Line {
        func fail(_ why: String) -> HostError { failure(number, why) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw fail("not valid UTF-8") }
        let json: JSON
        do { json = try JSON(parsing: text) } catch { throw fail("not JSON (\(error.description))") }
        guard case .object(let members) = json else {
            throw fail("expected a JSON object like 'lansync get --json' prints")
        }
        if let unknown = members.first(where: { !knownKeys.contains($0.key) }) {
            throw fail("unknown key '\(unknown.key)' (expected id, type, fields, deleted)")
        }
        var id: ItemID?
        if let value = json["id"] {
            guard case .string(let s) = value else { throw fail("\"id\" must be a string") }
            do { id = try ItemID(s) } catch { throw fail(error.description) }
        }
        var type: String?
        if let value = json["type"] {
            guard case .string(let s) = value else { throw fail("\"type\" must be a string") }
            do { try ItemState.validate(type: s) } catch { throw fail(error.description) }
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
                do { name = try FieldName(member.key) } catch { throw fail(error.description) }
                guard let v = member.value.value else {
                    throw fail("field '\(member.key)' holds an object; values are null, bool, number, string or list")
                }
                fields.append((name, v))
            }
        }
        return Line(number: number, id: id, type: type, fields: fields, deleted: deleted)
    }

    /// Turns lines into edits. Each edit is tried on the item's state as the lines so far leave
    /// it (under a planning node that never writes), so a line the merge core would refuse is
    /// reported with its number before anything is written.
    static func plan(
        _ lines: [Line],
        store: ReplicaStore,
        wallMilliseconds: UInt64
    ) throws -> ([(ItemID, ItemEdit)], [Int]) {
        var edits: [(ItemID, ItemEdit)] = []
        var lineOfEdit: [Int] = []
        var known: [ItemID: ItemState] = [:]
        var rng = SystemRandomNumberGenerator()
        var planningCounter: UInt64 = 0
        let planner = NodeID(high: 0, low: 0)
        for line in lines {
            let id = line.id ?? ItemID.uuidV7(milliseconds: wallMilliseconds, using: &rng)
            var state = try known[id] ?? store.itemState(id) ?? ItemState(id: id)
            for edit in try lineEdits(line, id: id, state: state) {
                planningCounter += 1
                do {
                    try state.apply(
                        edit,
                        dot: Dot(node: planner, counter: planningCounter),
                        timestamp: HLCTimestamp(rawValue: planningCounter)
                    )
                } catch {
                    throw failure(line.number, error.description)
                }
                edits.append((id, edit))
                lineOfEdit.append(line.number)
            }
            known[id] = state
        }
        return (edits, lineOfEdit)
    }

    /// The edits that make `state` what `line` says, nothing for what it already is.
    static func lineEdits(_ line: Line, id: ItemID, state: ItemState) throws(HostError) -> [ItemEdit] {
        guard state.exists else {
            var edits: [ItemEdit] = [
                .create(type: line.type ?? ItemState.defaultType, assignments: line.fields.map { .set($0.0, $0.1) })
            ]
            if line.deleted == true { edits.append(.delete) }
            return edits
        }
        var edits: [ItemEdit] = []
        let shown = state.shownFields
        let assignments = line.fields.filter { shown[$0.0] != $0.1 || state.fields[$0.0]?.hasConflict == true }.map {
            Assignment.set($0.0, $0.1)
        }
        let retype = line.type.flatMap { $0 != state.type ? $0 : nil }
        let changes = !assignments.isEmpty || retype != nil
        // A line that says nothing of deletion must not bring a deleted item back (as 'set'
        // refuses to edit one): the line has to say which it means.
        if state.isDeleted, changes, line.deleted == nil {
            throw failure(
                line.number,
                "item \(id) is deleted; add \"deleted\": false to restore it with these values, or \"deleted\": true to change it and keep it deleted"
            )
        }
        if state.isDeleted, line.deleted == false || changes { edits.append(.restore) }
        if let retype { edits.append(.retype(retype)) }
        if !assignments.isEmpty { edits.append(.update(assignments)) }
        if line.deleted == true, !state.isDeleted || changes { edits.append(.delete) }
        return edits
    }
}

extension DataDirectory {
    /// Applies a plan in one transaction: all or nothing. `progress` is called with the number
    /// of edits done so far.
    public func importItems(_ plan: ImportPlan, into store: ReplicaStore, progress: ((Int) -> Void)? = nil) throws {
        do {
            let dots = try store.apply(plan.edits, wallMilliseconds: WallClock.milliseconds, progress: progress)
            if let first = dots.first { noteNewWriter(store, issued: first) }
        } catch let StoreError.edit(error, index) {
            throw ImportPlan.failure(plan.lineOfEdit[index], error.description)
        }
        nudgeNode()
    }
}
