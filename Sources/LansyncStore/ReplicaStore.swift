import Foundation
import GRDB
public import LansyncCore
import LansyncJSON
public import LansyncReplica

/// A replica kept in one SQLite file (WAL mode, `synchronous = FULL`): the durable home of
/// everything a node knows.
///
/// Guarantees:
/// - every local edit is one transaction, and so is every applied batch: a crash at any point
///   leaves the file as it was before or after, never between;
/// - a dot is never reused, and the version vector never claims a write the file does not hold,
///   even after the file is rolled back (a backup restored, a VM snapshot, a copied directory):
///   local writes are issued under a writer id whose continuity is proven by a marker outside the
///   file (``WriterLease``), and a new writer starts when it is not, or when a peer shows it holds
///   more of the writer than this file (``WriterContinuity``);
/// - "field states holding a version unseen by V" is answered by range scans of the `version`
///   index, in time proportional to the answer;
/// - the file is refused, with a clear error, if it is not a lansync replica or was written by a
///   newer version.
///
/// Thread-safe: all access goes through GRDB (a `DatabasePool` in a node, whose sessions read
/// while it writes; one connection in a command, see ``Connections``); several processes (the CLI
/// and the node) may use one file at once, SQLite serialising their writes.
public final class ReplicaStore: Sendable {
    public let path: String
    /// The file's connections: a pool or a single one (``Connections``).
    let database: any DatabaseWriter
    /// Where this replica's writer markers are kept.
    public let lease: WriterLease
    /// Which node each `node` row names (field states name nodes by row, ``StoredState``).
    let nodeRows = NodeRows()
    /// Opened read-only (a file this process may not write): nothing derived is caught up.
    let readOnly: Bool
    /// What signs this replica's own writes (Docs/SECURITY.md, "Signed writes").
    public let signing = WriteSigning()

    /// The replica file's name inside a data directory.
    public static let fileName = "replica.sqlite"

    private init(path: String, database: any DatabaseWriter, lease: WriterLease, readOnly: Bool = false) {
        self.path = path
        self.database = database
        self.lease = lease
        self.readOnly = readOnly
    }

    // MARK: Opening

    /// Creates a new replica file; refuses if one exists at `path`.
    public static func create(
        path: String,
        nodeID: NodeID,
        clusterID: NodeID,
        nodeName: String,
        fingerprint: String,
        historyLimit: Int = ReplicaConstants.defaultHistoryLimit,
        lease: WriterLease = .standard()
    ) throws(StoreError) -> ReplicaStore {
        let directory = (path as NSString).deletingLastPathComponent
        guard !FileManager.default.fileExists(atPath: path) else { throw .alreadyInitialised(directory: directory) }
        let store = try ReplicaStore(path: path, database: openPool(path), lease: lease)
        try store.guarded {
            try Schema.migrator.migrate(store.database)
            try store.database.write { db in
                for (key, value) in [
                    ("node_id", nodeID.text), ("cluster_id", clusterID.text), ("node_name", nodeName),
                    ("fingerprint", fingerprint), ("clock", "0"), ("history_limit", String(historyLimit)),
                    ("writer_id", nodeID.text),
                    // Nothing written yet, so nothing unsigned (``HeldWriteSigning``).
                    ("own_writes_signed", "1"),
                ] {
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, ?)", arguments: [key, value])
                }
                try db.execute(
                    sql: "INSERT INTO node(node_id, name) VALUES (?, ?)",
                    arguments: [nodeID.text, nodeName]
                )
                try db.execute(
                    sql: "INSERT INTO writer(writer_id, started, reason) VALUES (?, 0, 'init')",
                    arguments: [nodeID.text]
                )
            }
        }
        lease.record(nodeID, stamp: 0)
        return store
    }

    /// How many connections a process keeps to the replica file.
    public enum Connections: Sendable {
        /// A writer and a pool of readers (GRDB's `DatabasePool`): a node, whose sessions and API
        /// read while it writes.
        case pool
        /// One connection (GRDB's `DatabaseQueue`): a command that does one thing and exits. It
        /// opens without writing: a pool writes to the file as it opens (it makes sure a WAL
        /// file with a frame in it exists), so every command used to commit, sync the WAL and
        /// the directory, and checkpoint on exit, for nothing; it also parses the schema once,
        /// not once per connection.
        case one
    }

    /// Opens an existing replica file.
    public static func open(
        path: String,
        connections: Connections = .pool,
        lease: WriterLease = .standard()
    ) throws(StoreError) -> ReplicaStore {
        if let problem = FileAccess.readProblem(path) { throw .permissionDenied(problem) }
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notInitialised(directory: (path as NSString).deletingLastPathComponent)
        }
        // A replica this process may read but not write (another user's, shared read-only) opens
        // read-only: reading commands work, a write says it cannot.
        let readOnly = !FileAccess.isWritable(path)
        let store = try ReplicaStore(
            path: path,
            database: connections == .pool
                ? openPool(path, readOnly: readOnly) : openConnection(path, readOnly: readOnly),
            lease: lease,
            readOnly: readOnly
        )
        try store.guarded {
            let (applicationID, superseded, hasMeta) = try store.database.read { db in
                (
                    try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0,
                    try Schema.migrator.hasBeenSuperseded(db),
                    try db.tableExists("meta")
                )
            }
            guard applicationID == Schema.applicationID, hasMeta else {
                throw StoreError.notAReplica(path: path, reason: "a SQLite database of another program")
            }
            guard !superseded else { throw StoreError.newerSchema(path: path) }
            if readOnly {
                guard try store.database.read({ db in try Schema.migrator.hasCompletedMigrations(db) }) else {
                    throw StoreError.io(
                        "\(path) needs upgrading by this version of lansync, which needs write access: run any lansync command as its owner first"
                    )
                }
            } else {
                let applied = try store.database.read { db in try Schema.migrator.appliedIdentifiers(db) }
                try Schema.migrator.migrate(store.database)
                if !applied.contains(Schema.fieldRowsByItem) { try store.giveBackFreePages() }
            }
        }
        return store
    }

    /// Shrinks the file when a quarter of it or more is free pages (after an upgrade that
    /// rewrote a table: v20 rewrites `field`). A one-off: SQLite reuses free pages, and a replica
    /// only shrinks by collection, which frees little at a time.
    private func giveBackFreePages() throws {
        let (free, pages) = try database.read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0,
                try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            )
        }
        guard free > 0, free * 4 >= pages else { return }
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
            _ = try db.checkpoint(.truncate)
        }
    }

    /// The size the WAL file is cut back to after a checkpoint (64 MiB).
    static let walSizeLimit = 64 << 20

    /// Moves what it can of the WAL into the database file now, without waiting for readers (a
    /// running node's sessions read all the time): after an import, which writes everything in
    /// one transaction. The WAL file is cut to ``walSizeLimit`` once it restarts.
    public func checkpoint() throws(StoreError) {
        try guarded {
            try database.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        }
    }

    /// Makes the statements running now fail at once (SQLite's interrupt); their transactions
    /// roll back, and later statements run as usual. For a process that must stop now.
    public func interrupt() { database.interrupt() }

    private static func openPool(_ path: String, readOnly: Bool = false) throws(StoreError) -> DatabasePool {
        try opening(path, readOnly: readOnly) { location, configuration in
            let pool = try DatabasePool(path: location, configuration: configuration)
            if !readOnly {
                // GRDB's pool turns its writer to `synchronous = NORMAL` once it set up WAL mode,
                // after `prepareDatabase` ran: without this, a local edit acknowledged to the user
                // was not synced to disk (a power cut could lose it) until a peer's batch happened
                // to set FULL back on the node's connection.
                try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            }
            return pool
        }
    }

    /// One connection (``Connections/one``). It sets no journal mode (the file has been in WAL
    /// mode since it was created: SQLite keeps that in the file), so it keeps `prepareDatabase`'s
    /// `synchronous = FULL`, and it writes nothing until asked to.
    private static func openConnection(_ path: String, readOnly: Bool) throws(StoreError) -> DatabaseQueue {
        try opening(path, readOnly: readOnly) { location, configuration in
            try DatabaseQueue(path: location, configuration: configuration)
        }
    }

    /// Opens the file with `open`, given where to open it and how (shared by both kinds of
    /// ``Connections``).
    private static func opening<Database>(
        _ path: String,
        readOnly: Bool,
        _ open: (_ location: String, _ configuration: Configuration) throws -> Database
    ) throws(StoreError) -> Database {
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(30)
        config.prepareDatabase { db in
            guard !readOnly else { return }
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // After a checkpoint the WAL file is cut back to this size (Docs/STORAGE.md, "The WAL").
            try db.execute(sql: "PRAGMA journal_size_limit = \(walSizeLimit)")
        }
        // SQLite reads a WAL database only with its -shm file, which a reader without write
        // access cannot make. With no -wal file either, no writer is under way and the file is
        // whole: it is read as immutable (a snapshot; a node starting meanwhile is not seen).
        var opened = path
        let fm = FileManager.default
        if readOnly, !fm.fileExists(atPath: path + "-shm"), !fm.fileExists(atPath: path + "-wal") {
            let absolute = path.hasPrefix("/") ? path : fm.currentDirectoryPath + "/" + path
            var allowed = CharacterSet.urlPathAllowed
            allowed.remove(charactersIn: "?#%")
            opened =
                "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
        }
        do {
            return try open(opened, config)
        } catch let error as DatabaseError where readOnly && error.resultCode == .SQLITE_READONLY {
            // SQLite reads a WAL database only with its -shm file, which it cannot make here.
            throw StoreError.io(
                "cannot read \(path) without write access while no node runs on it (SQLite needs to make its -shm file beside it): run lansync as its owner, or start its node"
            )
        } catch {
            throw mapError(error, path: path)
        }
    }

    /// Runs `body`, turning database errors into ``StoreError``s.
    /// Damage met here leaves the damage mark (see ``damage``).
    func guarded<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            let mapped = Self.mapError(error, path: path)
            if case let .corrupt(_, detail) = mapped { markDamaged(detail) }
            throw mapped
        }
    }

    /// `error` as ``guarded(_:)`` reports it (and marks the file if it is damage).
    func guardedError(_ error: any Error) -> StoreError {
        let mapped = Self.mapError(error, path: path)
        if case let .corrupt(_, detail) = mapped { markDamaged(detail) }
        return mapped
    }

    static func mapError(_ error: any Error, path: String) -> StoreError {
        switch error {
        case let error as StoreError: return error
        case let error as EditError: return .edit(error, index: 0)
        case let error as DatabaseError:
            switch error.resultCode {
            case .SQLITE_NOTADB: return .notAReplica(path: path, reason: "not a SQLite database")
            case .SQLITE_CORRUPT: return .corrupt(path: path, detail: error.message ?? "corrupt")
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return .io("\(path) stayed locked by another process for 30 s: try again")
            case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM:
                return .io("cannot write \(path) (\(error.message ?? "permission denied")): check its permissions")
            case .SQLITE_FULL: return .io("the disk holding \(path) is full: free some space and try again")
            default: return .io("database error in \(path): \(error.message ?? String(describing: error))")
            }
        case let error as DecodingError:
            return .corrupt(path: path, detail: "a stored field state does not decode: \(error.message)")
        case is RowDecodingError:
            return .corrupt(path: path, detail: "a row holds a value of the wrong kind")
        default:
            return .io("\(path): \(error)")
        }
    }

    /// One read transaction, its errors reported as the store's.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try guarded { try database.read(body) }
    }

    // MARK: Writing

    /// How a write's commit reaches the disk.
    enum Durability {
        /// `synchronous = FULL`: the commit survives a power cut (local edits, the replica's own
        /// decisions).
        case full
        /// `synchronous = NORMAL` for this one transaction: a peer's changes, which the peer keeps
        /// and sends again if a power cut loses the commit (Docs/STORAGE.md, "Durability").
        case resent
    }

    /// A write of what this node keeps about other nodes (peers' records, member reports,
    /// names), in one transaction committed with `synchronous = NORMAL`: no fsync of its own.
    ///
    /// A power cut may lose the last of these commits (the next fsync'd commit, or a checkpoint,
    /// makes them durable). What is lost only makes the node believe a peer holds less, or was
    /// last heard of earlier, than it was: collection waits a little longer, an acknowledgement
    /// is reported again by the peer's next session, a member seen again may stay counted as
    /// forgotten until its next report (and a forgotten member rejoins from a snapshot in any
    /// case), and nothing replicated is touched. Never for items, fields, vectors or anything a
    /// peer was told this node holds.
    func writeBookkeeping(_ body: (Database) throws -> Void) throws(StoreError) {
        try guarded {
            try database.writeWithoutTransaction { db in
                try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
                defer { try? db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() }
                try db.inTransaction(.immediate) {
                    try body(db)
                    return .commit
                }
            }
        }
    }

    /// What a write's body decided: keep what it did, or not; and what the write returns.
    enum WriteEnd<T> {
        case commit(T)
        case rollback(T)
    }

    /// The one way anything replicated is written: refuses a replica marked damaged, reads its
    /// settings, takes the write lock at once (an immediate transaction: a writer that must wait
    /// waits before it reads, so what it read is what it writes over), runs `body` on a
    /// ``Transaction``, and once the transaction commits records the writer's marker it set
    /// (``Transaction/writerMarker``), so a later restore of the file is seen for what it is.
    ///
    /// Errors of `body` reach the caller as they are, except the database's own, which are the
    /// store's (and leave the damage mark when they are damage). Nothing is kept when it throws.
    ///
    /// `foreignKeyChecks: false` is for a body that deletes rows others point to, their children
    /// first (collection): SQLite looks for children of each deleted parent row, and `version`
    /// has no index by field, so each field row deleted would scan the whole version index.
    func write<T>(
        _ durability: Durability = .full,
        foreignKeyChecks: Bool = true,
        _ body: (inout Transaction, ReplicaInfo) throws -> WriteEnd<T>
    ) throws -> T {
        try refuseIfDamaged()
        do {
            return try database.writeWithoutTransaction { db in
                // Prepared once per connection, as the statements of every write below (each
                // statement compiled anew cost 10-30 µs; a peer's batch ran a dozen).
                if durability == .resent { try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute() }
                defer {
                    if durability == .resent { try? db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute() }
                }
                if !foreignKeyChecks { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
                defer { if !foreignKeyChecks { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
                var result: T?
                var marker: (writer: NodeID, stamp: UInt64)?
                try db.inTransaction(.immediate) {
                    let me = try info(db: db)
                    var tx = try Transaction(db: db, historyLimit: me.historyLimit, nodes: nodeRows)
                    switch try body(&tx, me) {
                    case .commit(let value):
                        try tx.refreshSearchTexts()
                        result = value
                        marker = tx.writerMarker
                        return .commit
                    case .rollback(let value):
                        result = value
                        return .rollback
                    }
                }
                if let marker { lease.record(marker.writer, stamp: marker.stamp) }
                return result!
            }
        } catch let error as DatabaseError {
            throw guardedError(error)
        } catch let error as DecodingError {
            throw guardedError(error)
        } catch let error as RowDecodingError {
            throw guardedError(error)
        }
    }
}
