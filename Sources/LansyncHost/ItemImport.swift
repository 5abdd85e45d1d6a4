import Crypto
public import Foundation
public import LansyncCore
import LansyncJSON
import LansyncReplica
public import LansyncStore

/// An import of JSON Lines (as `export` writes them) as local edits, streamed: each line is
/// checked, compared with what the replica holds (earlier lines included) and applied at once,
/// all in one transaction, so memory stays bounded whatever the input's size, and a bad line
/// leaves the replica as it was. A line that says what the replica already holds is no edit, so
/// importing an export into its own replica changes nothing.
///
/// A line without an id gets one derived from its bytes (and, for a line repeated in the input,
/// from how many times it came before): a UUIDv8 of their SHA-256. Running an import again, after
/// a failure or an interruption, therefore edits the same items instead of creating every one
/// twice (the resend problem client-made ids exist to solve).
public enum ItemImport {
    /// One line of input, checked.
    struct Line: Sendable {
        let number: Int
        let id: ItemID?
        let type: String?
        let fields: [(FieldName, Value)]
        let deleted: Bool?
    }

    /// How far an import has got.
    public struct Progress: Sendable {
        /// Non-blank lines read so far, and the edits they made.
        public var lines = 0
        public var edits = 0
        /// Bytes of input read so far.
        public var bytes = 0

        public init() {}
    }

    static let knownKeys: Set<String> = ["id", "type", "fields", "deleted", "conflicts"]

    /// Imports the lines that `read` returns chunk by chunk (nil at the end) in one edit session.
    /// `progress` is called after every line that made edits, and every 1,000 lines.
    public static func run(
        _ read: () throws -> Data?,
        into session: inout EditSession,
        progress: (Progress) -> Void = { _ in }
    ) throws -> Progress {
        var state = Progress()
        var pending: [UInt8] = []
        var number = 0
        /// How many times each id-less line (by digest) came before.
        var seen: [SHA256.Digest: Int] = [:]
        while let chunk = try read() {
            state.bytes += chunk.count
            pending.append(contentsOf: chunk)
            let lines = lineRanges(in: pending)
            for range in lines {
                number += 1
                try take(pending[range], number: number, seen: &seen, into: &session, state: &state, progress)
            }
            if let last = lines.last { pending.removeSubrange(0...last.upperBound) }
        }
        if !pending.isEmpty {
            number += 1
            try take(pending[...], number: number, seen: &seen, into: &session, state: &state, progress)
        }
        progress(state)
        return state
    }

    /// The ranges of the whole lines in `bytes` (each without its newline), found with `memchr`
    /// on the buffer: a search through `Data`'s indices checked each byte's access at run time,
    /// 6% of an import.
    static func lineRanges(in bytes: [UInt8]) -> [Range<Int>] {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return [] }
            var ranges: [Range<Int>] = []
            var start = 0
            while start < buffer.count, let found = memchr(base + start, 0x0a, buffer.count - start) {
                let newline = base.distance(to: UnsafeRawPointer(found))
                ranges.append(start..<newline)
                start = newline + 1
            }
            return ranges
        }
    }

    /// Imports one line. A function of its own, not a closure in ``run(_:into:progress:)``: the
    /// variables a closure captures are checked for exclusive access at run time on every use,
    /// 4% of an import's time.
    private static func take(
        _ raw: ArraySlice<UInt8>,
        number: Int,
        seen: inout [SHA256.Digest: Int],
        into session: inout EditSession,
        state: inout Progress,
        _ progress: (Progress) -> Void
    ) throws {
        var bytes = Array(raw)
        if bytes.last == 0x0d { bytes.removeLast() }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        let line = try parseLine(bytes, number: number)
        let id = line.id ?? derivedID(bytes, seen: &seen)
        let edits = try lineEdits(line, id: id, state: try session.itemState(id))
        for edit in edits {
            do {
                try session.apply(edit, to: id)
            } catch StoreError.edit(let error, _) {
                var failure = failure(line.number, error.description)
                failure.code = error.code
                failure.cause = error
                throw failure
            }
        }
        state.lines += 1
        state.edits += edits.count
        if !edits.isEmpty || state.lines % 1000 == 0 { progress(state) }
    }

    /// The id of a line without one: the same line (and the same repetition of it) always gets
    /// the same id.
    static func derivedID(_ line: [UInt8], seen: inout [SHA256.Digest: Int]) -> ItemID {
        let digest = SHA256.hash(data: line)
        let repetition = seen[digest, default: 0]
        seen[digest] = repetition + 1
        var hasher = SHA256()
        hasher.update(data: Array("lansync import line\u{0}".utf8))
        hasher.update(data: line)
        hasher.update(data: Array("\u{0}\(repetition)".utf8))
        return ItemID.uuidV8(digest: hasher.finalize())
    }

    static func failure(_ number: Int, _ why: String) -> HostError {
        HostError("line \(number): \(why); nothing was imported")
    }

    /// A field that holds an object: well formed, but no value lansync keeps (the API's 422, as
    /// for an assignment's object).
    static func objectValue(_ field: String, _ fail: (String) -> HostError) -> HostError {
        var object = fail(
            "field '\(field)' holds an object; values are null, bool, number, string, list, or a link {\"ref\": ID}"
        )
        object.code = .overLimit
        return object
    }

    static func parseLine(_ bytes: [UInt8], number: Int) throws(HostError) -> Line {
        try parse(bytes, number: number) { failure(number, $0) }
    }

    /// Checks one item in the form `get --json` prints; `fail` words a problem.
    static func parse(_ bytes: [UInt8], number: Int, fail: (String) -> HostError) throws(HostError) -> Line {
        /// A refused name or type: over a limit is well formed but not keepable (the API's 422).
        func refused(_ error: EditError) -> HostError {
            var failure = fail(error.description)
            failure.code = error.code == .overLimit ? .overLimit : .badInput
            return failure
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw fail("not valid UTF-8") }
        let json: JSON
        do { json = try JSON(parsing: text) } catch {
            // Sound JSON (which has no integer limits) with an integer past 64 bits.
            guard error.isNumberOutOfRange else { throw fail("not JSON (\(error.description))") }
            var tooLarge = fail("holds an \(error.description)")
            tooLarge.code = .overLimit
            throw tooLarge
        }
        guard case .object(let members) = json else {
            throw fail("expected a JSON object like 'lansync get --json' prints")
        }
        if let unknown = members.first(where: { !knownKeys.contains($0.key) }) {
            throw fail("unknown key '\(unknown.key)' (expected id, type, fields, deleted)")
        }
        // Ignored (an export line carries the fields in conflict), but only in the form export writes.
        if let value = json["conflicts"] {
            guard case .array(let names) = value, names.allSatisfy({ if case .string = $0 { true } else { false } })
            else { throw fail("\"conflicts\" must be a list of field names, as export writes it (it is ignored)") }
        }
        var id: ItemID?
        if let value = json["id"] {
            guard case .string(let s) = value else { throw fail("\"id\" must be a string") }
            do { id = try ItemID(s) } catch { throw fail(error.description) }
        }
        var type: String?
        if let value = json["type"] {
            guard case .string(let s) = value else { throw fail("\"type\" must be a string") }
            do { try ItemState.validate(type: s) } catch { throw refused(error) }
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
                do { name = try FieldName(member.key) } catch { throw refused(error) }
                guard let v = member.value.value else { throw objectValue(member.key, fail) }
                fields.append((name, v))
            }
        }
        return Line(number: number, id: id, type: type, fields: fields, deleted: deleted)
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
    /// Imports JSON Lines from `input` (``ItemImport``) in one transaction: all or nothing.
    /// `progress` is called as lines are applied.
    @discardableResult
    public func importItems(
        from input: FileHandle,
        into store: ReplicaStore,
        progress: (ItemImport.Progress) -> Void = { _ in }
    ) throws -> ItemImport.Progress {
        var result = ItemImport.Progress()
        var firstDot: Dot?
        let wall = WallClock.milliseconds
        try store.applyEdits(wallMilliseconds: wall) { session in
            result = try ItemImport.run(
                { try input.read(upToCount: 1 << 18).flatMap { $0.isEmpty ? nil : $0 } },
                into: &session,
                progress: progress
            )
            firstDot = session.first
        }
        if let firstDot { noteNewWriter(store, issued: firstDot) }
        // The import was one transaction, so the WAL holds all it wrote: move it into the file
        // now. A checkpoint that fails changes nothing the import did; SQLite's own follow.
        if result.edits > 0 { try? store.checkpoint() }
        if result.edits > 0 { nudgeNode() }
        return result
    }
}

extension DataDirectory {
    /// Creates an item from its JSON form, as `export` writes a line and the API takes a create
    /// body (`{"id"?, "type", "fields", "deleted"?}`), through the same path as `lansync add`;
    /// returns its id (a new UUIDv7 when the body names none). Throws, changing nothing, for bad
    /// JSON, unknown keys, and an id that exists.
    public func createItem(json bytes: [UInt8], in store: ReplicaStore) throws -> ItemID {
        let line = try ItemImport.parse(bytes, number: 1) { HostError("the item \($0)") }
        var rng = SystemRandomNumberGenerator()
        let id = line.id ?? ItemID.uuidV7(milliseconds: WallClock.milliseconds, using: &rng)
        if let state = try store.itemState(id), state.exists { throw EditError.itemExists(id) }
        try edit(
            .create(type: line.type ?? ItemState.defaultType, assignments: line.fields.map { .set($0.0, $0.1) }),
            on: id,
            in: store
        )
        if line.deleted == true { try edit(.delete, on: id, in: store) }
        return id
    }
}
