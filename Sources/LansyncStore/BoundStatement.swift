import GRDB
import GRDBSQLite
import LansyncCore
import LansyncReplica

/// Values bound by position (SQLite counts from 1) to a statement run with
/// ``GRDB/Statement/run(_:)``.
struct Bindings {
    fileprivate let handle: OpaquePointer

    func int(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func int(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }
    func bool(_ index: Int32, _ value: Bool) { sqlite3_bind_int64(handle, index, value ? 1 : 0) }
    func text(_ index: Int32, _ value: String) { sqlite3_bind_text(handle, index, value, -1, transient) }
    func blob(_ index: Int32, _ value: [UInt8]) {
        // A zero-length blob is still a blob, not NULL: give SQLite a pointer it can copy from.
        _ = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob(
                handle,
                index,
                bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                Int32(bytes.count),
                transient
            )
        }
    }
}

/// The current row of a statement stepped by ``GRDB/Statement/forEachRow(_:)``, read in place.
struct Columns {
    fileprivate let handle: OpaquePointer

    func int(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// A text column as a `String` (empty for NULL).
    func text(_ index: Int32) -> String {
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        return String(
            decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index))),
            as: UTF8.self
        )
    }

    /// A blob column's bytes; nil for NULL.
    func blob(_ index: Int32) -> [UInt8]? {
        guard sqlite3_column_type(handle, index) != SQLITE_NULL else { return nil }
        // A zero-length blob has no pointer.
        guard let bytes = sqlite3_column_blob(handle, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index))))
    }

    /// A node id stored as its text, parsed from SQLite's own buffer (no `String` made); nil if
    /// the column is NULL or not an id.
    func nodeID(_ index: Int32) -> NodeID? {
        guard let text = sqlite3_column_text(handle, index) else { return nil }
        return NodeID(utf8: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index))))
    }
}

/// SQLite's SQLITE_TRANSIENT (a destructor of -1: copy the value now), which Swift does not import.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

extension Statement {
    /// Runs the statement once (one that returns no rows) with the values `bind` binds, as
    /// `execute(arguments:)` does without building `StatementArguments`.
    ///
    /// For the write path's statements that run once per field (an import writes millions):
    /// GRDB's arguments are an array of `DatabaseValue`s, each retained, released and checked
    /// against the statement, about a tenth of an import's time. Only inside a transaction GRDB
    /// opened: the statement is stepped directly, so GRDB's per-statement bookkeeping (which
    /// matters when a statement begins or ends a transaction) is skipped, and every value must be
    /// bound each time.
    func run(_ bind: (Bindings) -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        bind(Bindings(handle: handle))
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = sqlite3_db_handle(handle).map { String(cString: sqlite3_errmsg($0)) }
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
        sqlite3_reset(handle)
    }
}

extension Statement {
    /// Steps the statement (one without arguments) through its rows, handing each to `body`, as
    /// `Row.fetchAll` does without making a `Row` and its values for each: for reads that run
    /// a row per writer whenever a delta is planned (``ReplicaStore/versionVector(db:)``). Only
    /// inside a transaction GRDB opened, as ``run(_:)``.
    func forEachRow(_ body: (Columns) throws -> Void) throws {
        try forEachRow(binding: { _ in }, body)
    }

    /// The same for a statement with arguments, bound by `bind` as in ``run(_:)``.
    func forEachRow(binding bind: (Bindings) -> Void, _ body: (Columns) throws -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        bind(Bindings(handle: handle))
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                let message = sqlite3_db_handle(handle).map { String(cString: sqlite3_errmsg($0)) }
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
            }
            try body(Columns(handle: handle))
        }
    }
}
