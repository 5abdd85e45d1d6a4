import CSQLite3
import Foundation

/// A minimal SQLite connection: enough to watch a replica's version vector commit (reading the
/// file a running node writes, as any reader may in WAL mode) and to measure plain SQLite.
public final class SQLite {
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    public init(_ path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            defer { sqlite3_close(db) }
            throw BenchError("cannot open \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        for s in statements.values { sqlite3_finalize(s) }
        sqlite3_close(db)
    }

    public func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw error(sql) }
    }

    /// Runs a cached prepared statement with text/integer bindings; returns every row as text.
    @discardableResult
    public func query(_ sql: String, _ bindings: [Binding] = []) throws -> [[String]] {
        let statement: OpaquePointer
        if let cached = statements[sql] {
            statement = cached
        } else {
            var s: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK, let s else { throw error(sql) }
            statements[sql] = s
            statement = s
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (i, b) in bindings.enumerated() {
            switch b {
            case .text(let t): sqlite3_bind_text(statement, Int32(i + 1), t, -1, SQLITE_TRANSIENT)
            case .int(let n): sqlite3_bind_int64(statement, Int32(i + 1), n)
            }
        }
        var rows: [[String]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(sql) }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { c in
                    sqlite3_column_text(statement, c).map { String(cString: $0) } ?? ""
                }
            )
        }
        return rows
    }

    public enum Binding { case text(String), int(Int64) }

    private func error(_ sql: String) -> BenchError {
        BenchError("SQLite: \(String(cString: sqlite3_errmsg(db))) in \(sql.prefix(80))")
    }
}

// SQLite's "copy the bytes now" destructor, which Swift cannot import as a macro.
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// An error that ends the run with one line saying what failed.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
