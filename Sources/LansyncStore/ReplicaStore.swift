import Foundation
import GRDB
public import LansyncCore
import LansyncJSON

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
/// Thread-safe: all access goes through GRDB's `DatabasePool`; several processes (the CLI and
/// the node) may use one file at once, SQLite serialising their writes.
public final class ReplicaStore: Sendable {
    public let path: String
    let pool: DatabasePool
    /// Where this replica's writer markers are kept.
    public let lease: WriterLease
    /// Which node each `node` row names (field states name nodes by row, ``StoredState``).
    let nodeRows = NodeRows()

    /// The replica file's name inside a data directory.
    public static let fileName = "replica.sqlite"
    /// Versions kept per field in `history` unless `init --history` says otherwise.
    public static let defaultHistoryLimit = 1000

    private init(path: String, pool: DatabasePool, lease: WriterLease) {
        self.path = path
        self.pool = pool
        self.lease = lease
    }

    // MARK: Opening

    /// Creates a new replica file; refuses if one exists at `path`.
    public static func create(
        path: String,
        nodeID: NodeID,
        clusterID: NodeID,
        nodeName: String,
        fingerprint: String,
        historyLimit: Int = defaultHistoryLimit,
        lease: WriterLease = .standard()
    ) throws(StoreError) -> ReplicaStore {
        let directory = (path as NSString).deletingLastPathComponent
        guard !FileManager.default.fileExists(atPath: path) else { throw .alreadyInitialised(directory: directory) }
        let store = try ReplicaStore(path: path, pool: openPool(path), lease: lease)
        try store.guarded {
            try Schema.migrator.migrate(store.pool)
            try store.pool.write { db in
                for (key, value) in [
                    ("node_id", nodeID.text), ("cluster_id", clusterID.text), ("node_name", nodeName),
                    ("fingerprint", fingerprint), ("clock", "0"), ("history_limit", String(historyLimit)),
                    ("writer_id", nodeID.text),
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

    /// Opens an existing replica file.
    public static func open(path: String, lease: WriterLease = .standard()) throws(StoreError) -> ReplicaStore {
        if let problem = FileAccess.readProblem(path) { throw .permissionDenied(problem) }
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notInitialised(directory: (path as NSString).deletingLastPathComponent)
        }
        // A replica this process may read but not write (another user's, shared read-only) opens
        // read-only: reading commands work, a write says it cannot.
        let readOnly = !FileAccess.isWritable(path)
        let store = try ReplicaStore(path: path, pool: openPool(path, readOnly: readOnly), lease: lease)
        try store.guarded {
            let (applicationID, superseded, hasMeta) = try store.pool.read { db in
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
                guard try store.pool.read({ db in try Schema.migrator.hasCompletedMigrations(db) }) else {
                    throw StoreError.io(
                        "\(path) needs upgrading by this version of lansync, which needs write access: run any lansync command as its owner first"
                    )
                }
            } else {
                try Schema.migrator.migrate(store.pool)
            }
        }
        return store
    }

    /// The size the WAL file is cut back to after a checkpoint (64 MiB).
    static let walSizeLimit = 64 << 20

    /// Moves what it can of the WAL into the database file now, without waiting for readers (a
    /// running node's sessions read all the time): after an import, which writes everything in
    /// one transaction. The WAL file is cut to ``walSizeLimit`` once it restarts.
    public func checkpoint() throws(StoreError) {
        try guarded {
            try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        }
    }

    /// Makes the statements running now fail at once (SQLite's interrupt); their transactions
    /// roll back, and later statements run as usual. For a process that must stop now.
    public func interrupt() { pool.interrupt() }

    private static func openPool(_ path: String, readOnly: Bool = false) throws(StoreError) -> DatabasePool {
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
            return try DatabasePool(path: opened, configuration: config)
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

    // MARK: Identity

    /// This replica's identity and settings.
    public func info() throws(StoreError) -> ReplicaInfo {
        try guarded {
            try pool.read { db in
                let meta = try Dictionary(
                    uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT key, value FROM meta").map {
                        ((try $0.decode(atIndex: 0) as String), (try $0.decode(atIndex: 1) as String))
                    }
                )
                guard let node = meta["node_id"].flatMap(NodeID.init(text:)),
                    let cluster = meta["cluster_id"].flatMap(NodeID.init(text:))
                else { throw StoreError.corrupt(path: path, detail: "its identity is missing from table meta") }
                return ReplicaInfo(
                    nodeID: node,
                    clusterID: cluster,
                    nodeName: meta["node_name"] ?? "",
                    fingerprint: meta["fingerprint"] ?? "",
                    historyLimit: Int(meta["history_limit"] ?? "") ?? Self.defaultHistoryLimit,
                    writerID: meta["writer_id"].flatMap(NodeID.init(text:)) ?? node
                )
            }
        }
    }

    /// Switches this replica to a new node identity (after a copied data directory was detected).
    /// Writes of the old id stay valid data; new writes use the new id, so two directories never
    /// issue dots under one id.
    public func adoptIdentity(nodeID: NodeID, fingerprint: String) throws(StoreError) {
        try guarded {
            try pool.write { db in
                let name = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'node_name'")
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'node_id'", arguments: [nodeID.text])
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'fingerprint'", arguments: [fingerprint])
                try db.execute(
                    sql: "INSERT OR IGNORE INTO node(node_id, name) VALUES (?, ?)",
                    arguments: [nodeID.text, name]
                )
                try Transaction.startWriter(nodeID, name: name, reason: .copied, db: db)
            }
        }
        lease.record(nodeID, stamp: try changeStamp())
    }

    /// Records the display name of a node (learnt from its hello).
    public func setNodeName(_ name: String, for node: NodeID) throws(StoreError) {
        try guarded {
            try pool.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO node(node_id, name) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET name = excluded.name",
                    arguments: [node.text, name]
                )
            }
        }
    }

    // MARK: Local edits

    /// Performs one local edit in one transaction; returns its dot.
    @discardableResult
    public func apply(_ edit: ItemEdit, to id: ItemID, wallMilliseconds: UInt64) throws(StoreError) -> Dot {
        try apply([(id, edit)], wallMilliseconds: wallMilliseconds)[0]
    }

    /// Performs several local edits in one transaction, each with its own dot: all or none.
    /// `progress` is called with the number of edits done so far.
    @discardableResult
    public func apply(
        _ edits: [(ItemID, ItemEdit)],
        wallMilliseconds: UInt64,
        progress: ((Int) -> Void)? = nil
    ) throws(StoreError) -> [Dot] {
        var dots: [Dot] = []
        do {
            try applyEdits(wallMilliseconds: wallMilliseconds) { session in
                for (id, edit) in edits {
                    dots.append(try session.apply(edit, to: id))
                    progress?(dots.count)
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw Self.mapError(error, path: path)
        }
        return dots
    }

    /// Performs local edits that `body` feeds one at a time through an ``EditSession``, all in
    /// one transaction: all are committed, or none (when `body` or an edit throws). Each edit is
    /// written as it comes, so memory stays bounded however many there are: `import` streams its
    /// input through here.
    ///
    /// Errors of `body` reach the caller as they are; the store's own are ``StoreError``s.
    public func applyEdits(
        wallMilliseconds: UInt64,
        _ body: (inout EditSession) throws -> Void
    ) throws {
        try refuseIfDamaged()
        let me = try info()
        var failure: (any Error)?
        try guarded {
            try pool.writeWithoutTransaction { db in
                var last: Dot?
                var stamp: UInt64 = 0
                try db.inTransaction(.immediate) {
                    var tx = try Transaction(db: db, historyLimit: me.historyLimit, nodes: nodeRows)
                    let writer = try tx.claimWriter(lease: lease, name: me.nodeName)
                    var session = EditSession(tx: tx, writer: writer, wallMilliseconds: wallMilliseconds)
                    do {
                        try body(&session)
                    } catch {
                        failure = error
                        return .rollback
                    }
                    guard session.count > 0 else { return .rollback }
                    tx = session.tx
                    try tx.setCounter(of: writer.row, to: session.counter)
                    stamp = try tx.countChange()
                    try tx.saveClock()
                    last = Dot(node: writer.id, counter: session.counter)
                    return .commit
                }
                if let last { lease.record(last.node, stamp: stamp) }
            }
        }
        guard let failure else { return }
        switch failure {
        case is StoreError, is EditError:
            throw failure
        case is DatabaseError, is DecodingError, is RowDecodingError:
            // The file failed under an edit: reported (and marked, if damaged) like any store error.
            throw guardedError(failure)
        default:
            throw failure
        }
    }

    // MARK: Sync

    /// This replica's version vector: how far it has received each node's writes.
    public func versionVector() throws(StoreError) -> VersionVector {
        try guarded { try pool.read { db in try Self.versionVector(db: db) } }
    }

    static func versionVector(db: Database) throws -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT node_id, counter FROM node WHERE counter > 0") {
            if let id = NodeID(text: (try row.decode(atIndex: 0))) {
                counters[id] = UInt64((try row.decode(atIndex: 1) as Int64))
            }
        }
        return VersionVector(counters)
    }

    /// What a stream starts from, read at once: the change stamp, the version vector, and (if
    /// asked) the nodes of which the replica holds versions beyond it (``unclaimedNodes(db:)``).
    func streamStart(
        unclaimed: (VersionVector) -> Bool
    ) throws(StoreError) -> (
        stamp: UInt64, versionVector: VersionVector, unclaimed: [NodeID]
    ) {
        try guarded {
            try pool.read { db in
                let stamp =
                    UInt64(try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'changes'") ?? "0") ?? 0
                let vv = try Self.versionVector(db: db)
                return (stamp, vv, unclaimed(vv) ? try Self.unclaimedNodes(db: db) : [])
            }
        }
    }

    /// The version index rows of one origin node after a counter, for ``DeltaPlanner``.
    public func versionRows(
        node: NodeID,
        after counter: UInt64,
        limit: Int
    ) throws(StoreError) -> [DeltaPlanner.IndexRow] {
        try read { db in try versionRows(db, node: node, after: counter, limit: limit) }
    }

    /// The local row number of a node id in table `node`; nil if this replica never heard of it.
    static func nodeRow(of node: NodeID, db: Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM node WHERE node_id = ?"), arguments: [node.text])
    }

    /// One read transaction, its errors reported as the store's.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try guarded { try pool.read(body) }
    }

    func versionRows(_ db: Database, node: NodeID, after counter: UInt64, limit: Int) throws -> [DeltaPlanner.IndexRow]
    {
        guard let nodeRow = try Self.nodeRow(of: node, db: db) else { return [] }
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT v.counter, i.item_id, f.name FROM version v
                    JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                    WHERE v.node = ? AND v.counter > ? ORDER BY v.counter LIMIT ?
                    """
            ),
            arguments: [nodeRow, Int64(clamping: counter), min(limit, Int(Int32.max))]
        )
        return try rows.map { row in
            (
                UInt64((try row.decode(atIndex: 0) as Int64)),
                FieldKey(
                    item: ItemID(unchecked: (try row.decode(atIndex: 1))),
                    field: FieldName(unchecked: (try row.decode(atIndex: 2)))
                )
            )
        }
    }

    /// The current states of the given fields (fields that do not exist are skipped).
    public func fieldUpdates(_ keys: [FieldKey]) throws(StoreError) -> [FieldUpdate] {
        let read = try sizedFieldUpdates(keys)
        if let broken = read.broken.first {
            throw .corrupt(path: path, detail: "the state of \(broken.item).\(broken.field) does not decode")
        }
        return read.updates
    }

    /// The same, with their stored size in bytes (states, item ids and names): what a batch of
    /// them weighs, without encoding anything again; and the keys whose state does not decode
    /// (damage: the replica is marked damaged, the caller decides what to send instead).
    func sizedFieldUpdates(
        _ keys: [FieldKey]
    ) throws(StoreError) -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        let read = try read { db in try sizedFieldUpdates(db, keys) }
        noteBroken(read.broken)
        return read
    }

    /// The same, inside a read transaction; the caller reports broken states (``noteBroken(_:)``).
    func sizedFieldUpdates(
        _ db: Database,
        _ keys: [FieldKey]
    ) throws -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        let statement = try db.cachedStatement(
            sql: """
                SELECT f.state FROM field f JOIN item i ON i.id = f.item WHERE i.item_id = ? AND f.name = ?
                """
        )
        var bytes = 0
        var broken: [FieldKey] = []
        let updates = try keys.compactMap { key -> FieldUpdate? in
            guard let blob = try Data.fetchOne(statement, arguments: [key.item.rawValue, key.field.rawValue])
            else { return nil }
            bytes += blob.count + key.item.rawValue.utf8.count + key.field.rawValue.utf8.count
            guard let state = try? StoredState.decode(Array(blob), db: db, nodes: nodeRows) else {
                broken.append(key)
                return nil
            }
            return FieldUpdate(key: key, state: state)
        }
        return (updates, bytes, broken)
    }

    /// Marks the replica damaged when a field state did not decode.
    func noteBroken(_ broken: [FieldKey]) {
        if let first = broken.first { markDamaged("the state of \(first.item).\(first.field) does not decode") }
    }

    /// Decides whether an incoming change is refused (``Limits``, or the relay's): a reason, or
    /// nil. It sees the field key, the field as merging the change would leave it, the field as
    /// this replica holds it before the merge (nil if new), and a count of the item's user fields
    /// before the merge (read only if asked).
    public typealias Refusal = @Sendable (FieldKey, FieldState, FieldState?, () throws -> Int) throws -> String?

    /// Merges a batch received from a peer, and records what it covers, in one transaction.
    /// Applying a batch again changes nothing. Returns how many fields changed.
    ///
    /// With `refuse` (the relay), a field state it refuses is not merged: this replica overrules
    /// it instead, with a write of its own that has seen it and keeps the field's current value
    /// (null if it had none), in the same transaction. So the refusal reaches every node and the
    /// batch's other changes, and the stream, carry on.
    ///
    /// A batch that covers more of this replica's own writer than the replica holds retires that
    /// writer (``WriterContinuity``).
    ///
    /// Writes that `revoked` refuses (a revoked node's, after its cut) are overruled the same way,
    /// keeping the field's value without them; an item such a write created is deleted.
    @discardableResult
    public func apply(
        _ batch: DeltaBatch,
        wallMilliseconds: UInt64,
        refuse: Refusal? = nil,
        revoked: RevokedWriters = RevokedWriters()
    ) throws(StoreError) -> Int {
        try apply(
            batch,
            stream: nil,
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked,
            writers: .standard,
            allowance: WriterBounds.standard.perSession
        ).changed
    }

    /// Merges a batch of `sender`'s stream (sent while it wrote as `incarnation`). What the batch
    /// covers is recorded as that stream's progress (``resume(from:)``) and joins the version
    /// vector only when the stream completes (``completeStream(from:)``), so an interrupted stream
    /// never leaves a claim on writes whose newer states were still to come (``StreamResume``).
    @discardableResult
    public func apply(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: Refusal? = nil,
        revoked: RevokedWriters = RevokedWriters()
    ) throws(StoreError) -> Int {
        try receive(
            batch,
            from: sender,
            incarnation: incarnation,
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked
        ).changed
    }

    /// ``apply(_:from:incarnation:wallMilliseconds:refuse:revoked:)``, within `writers`: the
    /// batch's writers are checked first (``WriterCheck``), with `allowance` writers still allowed
    /// to be new in this session. A batch past a bound is refused whole (``StoreError/tooManyWriters(held:new:limit:)``,
    /// ``StoreError/tooManyNewWriters(new:perSession:)``); covers naming writers this replica
    /// cannot verify are left out. Returns what the batch did.
    @discardableResult
    public func receive(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: Refusal? = nil,
        revoked: RevokedWriters = RevokedWriters(),
        writers: WriterBounds = .standard,
        allowance: Int? = nil
    ) throws(StoreError) -> ReceivedBatch {
        try apply(
            batch,
            stream: (sender, incarnation),
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked,
            writers: writers,
            allowance: allowance ?? writers.perSession
        )
    }

    private func apply(
        _ batch: DeltaBatch,
        stream: (sender: NodeID, incarnation: NodeID)?,
        wallMilliseconds: UInt64,
        refuse: Refusal?,
        revoked: RevokedWriters,
        writers: WriterBounds,
        allowance: Int
    ) throws(StoreError) -> ReceivedBatch {
        try refuseIfDamaged()
        let me = try info()
        // Before the write lock: the look-ups are reads, and a refused batch never takes it.
        let check = try guarded {
            let check = try WriterCheck(batch, cache: nodeRows) { lookUp in try pool.read(lookUp) }
            if !check.newWriters.isEmpty {
                try pool.read { db in try check.check(writers, allowance: allowance, db: db) }
            }
            return check
        }
        var marker: (writer: NodeID, stamp: UInt64)?
        let changed = try guarded {
            try pool.writeWithoutTransaction { db in
                var changed = 0
                // A peer's batch may skip the fsync of its commit (Docs/STORAGE.md, "Durability"):
                // the sender keeps everything, and the stream's progress commits with the data.
                if stream != nil { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
                defer { if stream != nil { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
                try db.inTransaction(.immediate) {
                    // Checked again under the write lock: another session may have brought
                    // writers since the read (a look-up only, when none are new).
                    try check.check(writers, allowance: allowance, db: db)
                    var tx = try Transaction(db: db, historyLimit: me.historyLimit, nodes: nodeRows)
                    tx.origin = .peer
                    // What the batch changes in each item's derived columns, applied at the end
                    // without reading the item again.
                    var derived: [Int64: Transaction.DerivedChange] = [:]
                    if let base = batch.base, !base.isEmpty {
                        let held = try tx.versionVector(of: base.nodes)
                        guard batch.isApplicable(to: held) else {
                            throw StoreError.staleDelta(base: base, held: held)
                        }
                    }
                    _ = try tx.retireWriterIfWitnessed(by: check.covers)
                    var writer: Transaction.ClaimedWriter?
                    var createdByRevoked: [(row: Int64, id: ItemID)] = []
                    // A batch carries an item's fields together: look each item up once, and skip
                    // reading fields of an item this transaction created (they cannot exist yet).
                    var itemRows: [ItemID: Int64] = [:]
                    var createdItems = Set<Int64>()
                    // Each item's user fields, counted once per batch when a limit asks (a new
                    // item has none): the field-count limit costs no query per field.
                    var userFields: [Int64: Int] = [:]
                    var savedInCreatedItems = Set<FieldKey>()
                    for update in batch.updates {
                        for version in update.change.versions {
                            tx.clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
                        }
                        let itemRow: Int64
                        if let known = itemRows[update.key.item] {
                            itemRow = known
                        } else if let stored = try tx.itemRow(update.key.item) {
                            itemRow = stored
                        } else {
                            itemRow = try tx.insertItem(update.key.item)
                            createdItems.insert(itemRow)
                            userFields[itemRow] = 0
                        }
                        itemRows[update.key.item] = itemRow
                        let created = createdItems.contains(itemRow)
                        let old =
                            created && !savedInCreatedItems.contains(update.key)
                            ? nil
                            : try tx.loadField(item: itemRow, name: update.key.field)
                        var merged = (old?.state ?? FieldState()).merged(with: update.change)
                        guard merged != old?.state else { continue }
                        var overruled: [FieldVersion] = []
                        if let refuse,
                            let reason = try refuse(
                                update.key,
                                merged,
                                old?.state,
                                {
                                    if let known = userFields[itemRow] { return known }
                                    let count = try Transaction.userFieldCount(db: db, item: itemRow)
                                    userFields[itemRow] = count
                                    return count
                                }
                            )
                        {
                            let timestamp = tx.clock.tick(wallMilliseconds: wallMilliseconds)
                            let dot = try tx.nextDot(&writer, lease: lease, name: me.nodeName)
                            let held = Set(old?.state.versions.map(\.dot) ?? [])
                            merged.overrule(
                                rejecting: update.change.versionDots.filter { !held.contains($0) },
                                keeping: old?.state.shownValue ?? .null,
                                reason: reason,
                                dot: dot,
                                timestamp: timestamp
                            )
                        } else if !revoked.isEmpty {
                            let outcome = try tx.overruleRevoked(
                                &merged,
                                old: old?.state,
                                field: update.key.field,
                                fieldRow: old?.row,
                                revoked: revoked,
                                writer: &writer,
                                lease: lease,
                                name: me.nodeName,
                                wallMilliseconds: wallMilliseconds
                            )
                            switch outcome {
                            case .none: break
                            case .overruled(let versions): overruled = versions
                            case .createdByRevoked: createdByRevoked.append((itemRow, update.key.item))
                            }
                        }
                        _ = try tx.saveField(
                            item: itemRow,
                            itemID: update.key.item,
                            name: update.key.field,
                            row: old?.row,
                            old: old?.state,
                            new: merged,
                            overruled: overruled
                        )
                        if created { savedInCreatedItems.insert(update.key) }
                        if old == nil, !update.key.field.isReserved, let count = userFields[itemRow] {
                            userFields[itemRow] = count + 1
                        }
                        derived[itemRow, default: Transaction.DerivedChange()].note(
                            update.key.field,
                            old: old?.state,
                            new: merged
                        )
                        changed += 1
                    }
                    for (row, change) in derived { try tx.updateItem(row: row, by: change) }
                    // After the derived columns, which a `_deleted` in this batch may have set.
                    changed += try tx.deleteItems(
                        createdByRevoked: createdByRevoked,
                        revoked: revoked,
                        writer: &writer,
                        lease: lease,
                        name: me.nodeName,
                        wallMilliseconds: wallMilliseconds
                    )
                    if let writer { try tx.setCounter(of: writer.row, to: writer.counter) }
                    // The writer's marker follows received changes too: a restore that loses them
                    // is a rollback as much as one that loses local edits.
                    if changed > 0 { marker = (try Transaction.currentWriter(db: db), try tx.countChange()) }
                    if let stream {
                        try tx.recordStream(from: stream.sender, incarnation: stream.incarnation, covers: check.covers)
                    } else {
                        for (node, counter) in check.covers.counters {
                            let row = try tx.nodeRow(node)
                            try tx.raiseCounter(of: row, to: counter)
                        }
                    }
                    try tx.saveClock()
                    return .commit
                }
                return changed
            }
        }
        if let marker { lease.record(marker.writer, stamp: marker.stamp) }
        return ReceivedBatch(
            changed: changed,
            newWriters: check.newWriters.count,
            unverifiedCovers: check.unverifiedCovers
        )
    }

    /// `sender`'s stream is complete (its `done` came after every batch was applied): what its
    /// batches covered joins the version vector, in one transaction.
    public func completeStream(from sender: NodeID) throws(StoreError) {
        try guarded {
            try pool.writeWithoutTransaction { db in
                // As for a peer's batches: what a lost commit held, the peer sends again.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
                try db.inTransaction(.immediate) {
                    try completeStream(from: sender, db: db)
                    return .commit
                }
            }
        }
    }

    private func completeStream(from sender: NodeID, db: Database) throws {
        var tx = try Transaction(db: db, historyLimit: 0, nodes: nodeRows)
        guard let stream = try Transaction.stream(db: db, from: sender) else { return }
        for (node, counter) in stream.covers.counters {
            // Two statements, not one nested in the other: `tx.raiseCounter(of: try tx.nodeRow(...))`
            // held a copy of the transaction (and of its node cache) while nodeRow grew the cache,
            // so every new node copied the whole cache.
            let row = try tx.nodeRow(node)
            try tx.raiseCounter(of: row, to: counter)
        }
        try db.execute(sql: "DELETE FROM stream WHERE peer_id = ?", arguments: [sender.text])
    }

    /// How far `sender`'s interrupted stream got, and its incarnation then (for the hello).
    public func resume(from sender: NodeID) throws(StoreError) -> (covers: VersionVector, incarnation: NodeID)? {
        try guarded { try pool.read { db in try Transaction.stream(db: db, from: sender) } }
    }

    /// `sender` said hello as `incarnation`: progress it made as another incarnation is dropped.
    public func meet(_ sender: NodeID, incarnation: NodeID) throws(StoreError) {
        try guarded {
            try pool.write { db in
                try db.execute(
                    sql: "DELETE FROM stream WHERE peer_id = ? AND incarnation <> ?",
                    arguments: [sender.text, incarnation.text]
                )
            }
        }
    }

    /// Fields whose versions the version index lost to newer writes after `cursor` (a change
    /// stamp and a field row, in that order), up to `limit`, and where the next look starts.
    func superseded(
        _ db: Database,
        after cursor: SupersededCursor,
        limit: Int
    ) throws -> (keys: [FieldKey], next: SupersededCursor, complete: Bool) {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT f.superseded_at, f.id, i.item_id, f.name FROM field f JOIN item i ON i.id = f.item
                    WHERE f.superseded_at > 0 AND (f.superseded_at, f.id) > (?, ?)
                    ORDER BY f.superseded_at, f.id LIMIT ?
                    """
            ),
            arguments: [Int64(clamping: cursor.stamp), cursor.field, limit]
        )
        var next = cursor
        let keys = try rows.map { row -> FieldKey in
            next = SupersededCursor(
                stamp: UInt64((try row.decode(atIndex: 0) as Int64)),
                field: try row.decode(atIndex: 1)
            )
            return FieldKey(
                item: ItemID(unchecked: (try row.decode(atIndex: 2))),
                field: FieldName(unchecked: (try row.decode(atIndex: 3)))
            )
        }
        return (keys, next, rows.count < limit)
    }

    /// Origin nodes of which this replica holds versions beyond its own version vector (states
    /// of streams not yet complete): a delta sends them too, unclaimed. One index seek per node.
    static func unclaimedNodes(db: Database) throws -> [NodeID] {
        try String.fetchAll(
            db,
            sql: """
                SELECT n.node_id FROM node n WHERE EXISTS (SELECT 1 FROM version v WHERE v.node = n.id AND v.counter > n.counter)
                """
        ).compactMap(NodeID.init(text:))
    }

    /// Checks the writer's continuity now, as a process that will sync starts: a replica found
    /// rolled back (or on a new boot) takes a new writer before it says hello, so its peers see a
    /// new incarnation (``StreamResume``). Returns the writer to announce.
    @discardableResult
    public func renewWriterIfUnproven() throws(StoreError) -> NodeID {
        try refuseIfDamaged()
        let me = try info()
        return try guarded {
            try pool.writeWithoutTransaction { db in
                var id = me.writerID
                try db.inTransaction(.immediate) {
                    var tx = try Transaction(db: db, historyLimit: me.historyLimit, nodes: nodeRows)
                    id = try tx.claimWriter(lease: lease, name: me.nodeName).id
                    return .commit
                }
                return id
            }
        }
    }

    /// Takes a peer's version vector (its hello) into account: if the peer holds more of this
    /// replica's current writer than the replica does, the replica was rolled back, and the writer
    /// is retired (the next local write starts a new one). Returns true if it was retired now.
    @discardableResult
    public func noteWitness(_ peer: VersionVector) throws(StoreError) -> Bool {
        // Read first: a session start should not take the write lock for nothing.
        let current = try info().writerID
        guard peer[current] > (try versionVector())[current] else { return false }
        return try guarded {
            try pool.write { db in
                var tx = try Transaction(db: db, historyLimit: 0, nodes: nodeRows)
                return try tx.retireWriterIfWitnessed(by: peer)
            }
        }
    }

    /// A number that grows with every transaction that changed a field: equal numbers mean the
    /// replica shows the same thing.
    public func changeStamp() throws(StoreError) -> UInt64 {
        try guarded {
            try pool.read { db in
                UInt64(try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'changes'") ?? "0") ?? 0
            }
        }
    }

    /// This replica's write identities, oldest first.
    public func writers() throws(StoreError) -> [WriterRecord] {
        try guarded {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT writer_id, started, reason FROM writer ORDER BY seq").compactMap {
                    row in
                    guard let id = NodeID(text: (try row.decode(atIndex: 0))) else { return nil }
                    return WriterRecord(
                        id: id,
                        started: UInt64(max(0, (try row.decode(atIndex: 1) as Int64))),
                        reason: WriterRecord.Reason(rawValue: (try row.decode(atIndex: 2))) ?? .unproven
                    )
                }
            }
        }
    }

    // MARK: Reading

    /// The whole replicated state of an item; nil if this replica has never heard of it.
    public func itemState(_ id: ItemID) throws(StoreError) -> ItemState? {
        try guarded {
            try pool.read { db in
                let item = try Transaction.loadItem(db: db, id, nodes: nodeRows)
                return item.row == nil ? nil : item.state
            }
        }
    }

    /// The items whose id is `typed` exactly, or else starts with it (as git takes a unique prefix
    /// of a commit id), deleted items included, sorted; at most `limit`. An exact match is the
    /// only one returned, even if longer ids start with it.
    public func itemIDs(matching typed: String, limit: Int = 5) throws(StoreError) -> [ItemID] {
        try guarded {
            try pool.read { db in
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM item WHERE item_id = ?", arguments: [typed]) == true {
                    return [ItemID(unchecked: typed)]
                }
                // Ids are ASCII below DEL, so the prefix's range ends before prefix + DEL: an index range.
                return try String.fetchAll(
                    db,
                    sql: "SELECT item_id FROM item WHERE item_id > ? AND item_id < ? ORDER BY item_id LIMIT ?",
                    arguments: [typed, typed + "\u{7F}", limit]
                ).map { ItemID(unchecked: $0) }
            }
        }
    }

    /// An item for display; nil if unknown.
    /// With `withLocalEdits`, it carries ``StoredItem/localEdit``, read in the same pass.
    public func storedItem(_ id: ItemID, withLocalEdits: Bool = false) throws(StoreError) -> StoredItem? {
        var found: StoredItem?
        try forEachItem(only: [id], localWriters: try localWriters(if: withLocalEdits)) { found = $0 }
        return found
    }

    /// This replica's writer ids, whose live versions make an item's ``StoredItem/localEdit``,
    /// when `wanted`.
    private func localWriters(if wanted: Bool) throws(StoreError) -> Set<NodeID>? {
        wanted ? Set(try writers().map(\.id)) : nil
    }

    /// Calls `body` with every item, sorted by id, reading in one snapshot without holding all
    /// items in memory; with `withLocalEdits`, each carries ``StoredItem/localEdit``.
    public func forEachItem(
        type: String? = nil,
        includeDeleted: Bool = false,
        withLocalEdits: Bool = false,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        try forEachItem(
            type: type,
            includeDeleted: includeDeleted,
            only: nil,
            localWriters: try localWriters(if: withLocalEdits),
            body
        )
    }

    /// One page of items, sorted by id: at most `limit`, with ids after `after` (the last id of
    /// the page before). A page shorter than `limit` is the last.
    /// With `withLocalEdits`, each item carries ``StoredItem/localEdit``, read in the same pass.
    public func items(
        type: String? = nil,
        includeDeleted: Bool = false,
        after: ItemID? = nil,
        limit: Int,
        withLocalEdits: Bool = false
    ) throws(StoreError) -> [StoredItem] {
        var page: [StoredItem] = []
        try forEachItem(
            type: type,
            includeDeleted: includeDeleted,
            only: nil,
            after: after,
            limit: limit,
            localWriters: try localWriters(if: withLocalEdits)
        ) { page.append($0) }
        return page
    }

    /// The items with these ids, in this order (deleted ones too; ids with no item are skipped),
    /// read in one snapshot and one statement: a page of a query. With `withLocalEdits`, each
    /// carries ``StoredItem/localEdit``.
    public func items(_ ids: [ItemID], withLocalEdits: Bool = false) throws(StoreError) -> [StoredItem] {
        guard !ids.isEmpty else { return [] }
        var found: [String: StoredItem] = [:]
        try forEachItem(
            only: ids,
            localWriters: try localWriters(if: withLocalEdits)
        ) { found[$0.id] = $0 }
        return ids.compactMap { found[$0.rawValue] }
    }

    /// Every item (or those of `only`) that passes the conditions, sorted by id. With
    /// `localWriters`, each item's ``StoredItem/localEdit`` is taken from the states read anyway,
    /// which then include the reserved fields' (a delete or a retype is an edit too).
    private func forEachItem(
        type: String? = nil,
        includeDeleted: Bool = true,
        only: [ItemID]?,
        after: ItemID? = nil,
        limit: Int? = nil,
        localWriters: Set<NodeID>? = nil,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let only, only.count == 1 {
            conditions.append("i.item_id = ?")
            arguments.append(only[0].rawValue)
        } else if let only {
            conditions.append("i.item_id IN (SELECT value FROM json_each(?))")
            arguments.append(JSON.array(only.map { .string($0.rawValue) }).text)
        }
        if let after {
            conditions.append("i.item_id > ?")
            arguments.append(after.rawValue)
        }
        if let type {
            conditions.append("i.type = ?")
            arguments.append(type)
        }
        if !includeDeleted { conditions.append("i.deleted = 0") }
        if let limit {
            // The page's items first (the item_id index), then their fields.
            let inner = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            conditions = ["i.id IN (SELECT i.id FROM item i \(inner) ORDER BY i.item_id LIMIT ?)"]
            arguments.append(limit)
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        // `_deleted` is only read for its versions (its value is the item's `deleted` column).
        let sql = """
            SELECT i.item_id, i.type, i.deleted, f.name, f.state, f.conflict FROM item i
            LEFT JOIN field f ON f.item = i.id\(localWriters == nil ? " AND f.name <> '_deleted'" : "")
            \(whereClause) ORDER BY i.item_id, f.name
            """
        try guarded {
            try pool.read { db in
                let cursor = try Row.fetchCursor(
                    db.cachedStatement(sql: sql),
                    arguments: StatementArguments(arguments)
                )
                var current: (id: String, type: String, deleted: Bool)?
                var fields: [(name: String, json: String)] = []
                var conflicts: [String] = []
                var latest = VersionVector()
                func flush() throws {
                    if let c = current {
                        var item = StoredItem(
                            id: c.id,
                            type: c.type,
                            deleted: c.deleted,
                            fields: fields,
                            conflicts: conflicts
                        )
                        if localWriters != nil, !latest.isEmpty { item.localEdit = latest }
                        try body(item)
                    }
                    fields = []
                    conflicts = []
                    latest = VersionVector()
                }
                while let row = try cursor.next() {
                    let id: String = (try row.decode(atIndex: 0))
                    if current?.id != id {
                        try flush()
                        current = (id, (try row.decode(atIndex: 1)), (try row.decode(atIndex: 2)))
                    }
                    guard let name: String = (try row.decode(atIndex: 3)) else { continue }
                    // Reserved fields are not shown, but a conflict on one (`_type`) is.
                    let shown = !name.hasPrefix("_")
                    if shown || localWriters != nil {
                        // The shown value is decoded from the state; a state that does not decode
                        // is damage, reported, never shown.
                        guard let blob: Data = try? row.decode(atIndex: 4),
                            let state = try? StoredState.decode(Array(blob), db: db, nodes: nodeRows)
                        else {
                            throw StoreError.corrupt(path: path, detail: "the state of \(id).\(name) does not decode")
                        }
                        if shown { fields.append((name, state.shownValue?.jsonText ?? "null")) }
                        if let localWriters {
                            for version in state.versions where localWriters.contains(version.dot.node) {
                                latest.raise(version.dot.node, to: version.dot.counter)
                            }
                        }
                    }
                    if name != FieldName.deleted.rawValue, try row.decode(atIndex: 5) as Bool { conflicts.append(name) }
                }
                try flush()
            }
        }
    }

    /// Every open conflict, sorted by item and field.
    public func conflicts() throws(StoreError) -> [FieldConflict] {
        try guarded {
            try pool.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT i.item_id, f.name, f.state FROM field f JOIN item i ON i.id = f.item
                        WHERE f.conflict = 1 ORDER BY i.item_id, f.name
                        """
                ).compactMap { row in
                    let state = try StoredState.decode(
                        Array((try row.decode(atIndex: 2) as Data)),
                        db: db,
                        nodes: nodeRows
                    )
                    guard state.shownValue != nil else { return nil }
                    return FieldConflict(
                        item: ItemID(unchecked: (try row.decode(atIndex: 0))),
                        field: FieldName(unchecked: (try row.decode(atIndex: 1))),
                        state: state
                    )
                }
            }
        }
    }

    /// Every kept version of an item's fields (or of one field), newest first.
    public func history(_ id: ItemID, field: FieldName? = nil) throws(StoreError) -> [HistoryEntry] {
        try guarded {
            try pool.read { db in
                var filter = ""
                var arguments: [any DatabaseValueConvertible] = [id.rawValue]
                if let field {
                    filter = " AND f.name = ?"
                    arguments.append(field.rawValue)
                }
                let names = try Dictionary(
                    Row.fetchAll(db, sql: "SELECT node_id, name FROM node WHERE name IS NOT NULL").map {
                        (try $0.decode(atIndex: 0) as String, try $0.decode(atIndex: 1) as String)
                    },
                    uniquingKeysWith: { first, _ in first }
                )
                // The live versions are in the field states; history holds the others (Transaction.recordHistory).
                var entries: [HistoryEntry] = []
                struct Version: Hashable {
                    let field: FieldName
                    let dot: Dot
                }
                var live: Set<Version> = []
                let fields = try Row.fetchAll(
                    db,
                    sql: "SELECT f.name, f.state FROM field f JOIN item i ON i.id = f.item WHERE i.item_id = ?"
                        + filter,
                    arguments: StatementArguments(arguments)
                )
                for row in fields {
                    let name = FieldName(unchecked: try row.decode(atIndex: 0))
                    let state = try StoredState.decode(
                        Array(try row.decode(atIndex: 1) as Data),
                        db: db,
                        nodes: nodeRows
                    )
                    for version in state.versions {
                        live.insert(Version(field: name, dot: version.dot))
                        entries.append(
                            HistoryEntry(
                                field: name,
                                dot: version.dot,
                                writerName: names[version.dot.node.text],
                                timestamp: version.timestamp,
                                write: version.write,
                                isLive: true
                            )
                        )
                    }
                }
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT f.name, n.node_id, n.name, h.counter, h.timestamp, h.write
                        FROM history h JOIN field f ON f.id = h.field JOIN node n ON n.id = h.node
                        JOIN item i ON i.id = f.item WHERE i.item_id = ?
                        """ + filter,
                    arguments: StatementArguments(arguments)
                )
                for row in rows {
                    guard let node = NodeID(text: (try row.decode(atIndex: 1))),
                        let write = FieldVersion.Write(historyText: try row.decode(atIndex: 5))
                    else { continue }
                    let name = FieldName(unchecked: try row.decode(atIndex: 0))
                    let dot = Dot(node: node, counter: UInt64((try row.decode(atIndex: 3) as Int64)))
                    guard !live.contains(Version(field: name, dot: dot)) else { continue }
                    entries.append(
                        HistoryEntry(
                            field: name,
                            dot: dot,
                            writerName: try row.decode(atIndex: 2),
                            timestamp: HLCTimestamp(rawValue: UInt64((try row.decode(atIndex: 4) as Int64))),
                            write: write,
                            isLive: false
                        )
                    )
                }
                // Newest first; one edit's fields (one dot) in field name order.
                return entries.sorted {
                    if ($0.timestamp, $0.dot.node.text, $0.dot.counter) != (
                        $1.timestamp, $1.dot.node.text, $1.dot.counter
                    ) {
                        return ($0.timestamp, $0.dot.node.text, $0.dot.counter) > (
                            $1.timestamp, $1.dot.node.text, $1.dot.counter
                        )
                    }
                    return $0.field < $1.field
                }
            }
        }
    }

    /// The names of the nodes this replica knows, by id.
    public func nodeNames() throws(StoreError) -> [NodeID: String] {
        try guarded {
            try pool.read { db in
                var names: [NodeID: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT node_id, name FROM node WHERE name IS NOT NULL") {
                    if let id = NodeID(text: (try row.decode(atIndex: 0))) { names[id] = (try row.decode(atIndex: 1)) }
                }
                return names
            }
        }
    }

    /// `PRAGMA integrity_check`: "ok", or SQLite's description of the damage.
    public func integrityCheck() throws(StoreError) -> String {
        try guarded {
            try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
        }
    }
}
