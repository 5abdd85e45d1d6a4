public import LansyncCore
public import LansyncReplica
public import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// A replica kept in PostgreSQL, in a schema of its own (``PostgresReplicaSchema``): where a
/// relay's replica goes when several relay processes share one (issue 34).
///
/// It implements ``LansyncStore/ReplicaStorage`` with the SQLite store's semantics (the shared
/// store suites run both); `lansync relay --store` runs on it.
///
/// Guarantees:
/// - every write is one transaction; writes from any number of processes take turns (an
///   advisory lock per replica), so dots are issued once and the feed's numbers and the change
///   stamp grow in commit order as they do in one SQLite file;
/// - a dot is never reused: a writer goes on only on the server incarnation it started on
///   (``serverIncarnation(_:)``), and is retired when a peer shows a rollback;
/// - ids and field names compare byte by byte, as in SQLite.
public final class PostgresReplica: Sendable {
    let database: BlockingPostgres
    /// The PostgreSQL schema holding this replica's tables.
    public let schema: String
    /// What signs this replica's own writes (Docs/SECURITY.md, "Signed writes").
    public let signing = WriteSigning()
    /// How many times ``quickChangeMark()`` was read.
    let polls = Atomic<Int>(0)
    /// This process's tag on the notifications its commits send (``commitsElsewhere()``).
    let tag = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    /// What ``commitsElsewhere()`` heard so far.
    let heard = Mutex(HeardCommits())

    private init(location: PostgresLocation, schema: String, logger: Logger) {
        self.schema = schema
        // The schema, the isolation every statement outside a snapshot assumes, and bounds on
        // waits the server enforces: a relay stuck on the write lock, or a transaction left open,
        // fails a call rather than holding every call of the process (a server that neither
        // answers nor closes meets the client's own bound, ``BlockingPostgres/deadline``).
        let settings: [PostgresQuery] = [
            "SET search_path TO \(unescaped: "\"\(schema)\"")", "SET default_transaction_isolation = 'read committed'",
            "SET lansync.tag TO \(unescaped: "'\(tag)'")",
            // Acknowledged means on disk, whatever the server's default: a crash the server
            // recovers from in place (one backend killed) keeps its start time, so commits it
            // lost would not show as lost (``serverIncarnation(_:)``).
            "SET synchronous_commit = on",
            "SET lock_timeout = '30s'",
            "SET statement_timeout = '60s'", "SET idle_in_transaction_session_timeout = '60s'",
        ]
        database = BlockingPostgres(connector: PostgresConnector(location: location, logger: logger)) { connection in
            let loop = connection.eventLoop
            return settings.reduce(loop.makeSucceededVoidFuture()) { done, setting in
                done.flatMap { connection.query(setting, logger: logger).map { _ in } }
            }
        }
    }

    /// Makes a new replica's tables in `schema` (which must not exist) with its identity; its
    /// first writer is `writer` (the node's own id by default: a node that wrote elsewhere before
    /// gives a new one, ``LansyncCore/NodeID/writer(for:)``).
    public static func create(
        at location: PostgresLocation,
        schema: String,
        nodeID: NodeID,
        clusterID: NodeID,
        nodeName: String,
        fingerprint: String,
        writer: NodeID? = nil,
        historyLimit: Int = ReplicaConstants.defaultHistoryLimit,
        logger: Logger
    ) throws(StoreError) -> PostgresReplica {
        let writer = writer ?? nodeID
        try checkName(schema)
        let replica = PostgresReplica(location: location, schema: schema, logger: logger)
        var made = false
        defer { if !made { replica.close() } }
        try replica.guarded {
            try replica.database.transaction(write: true) { db in
                // Two relays making one replica at once take turns; the second finds the schema.
                try db.run("SELECT pg_advisory_xact_lock(7421, hashtext(\(schema)))")
                guard try db.value("SELECT count(*) FROM pg_namespace WHERE nspname = \(schema)", as: Int.self) == 0
                else {
                    throw StoreError.alreadyInitialised(directory: "PostgreSQL schema \(schema)")
                }
                try db.run("CREATE SCHEMA \(unescaped: "\"\(schema)\"")")
                for statement in PostgresReplicaSchema.tables { try db.run(statement) }
                for (key, value) in [
                    ("node_id", nodeID.text), ("cluster_id", clusterID.text), ("node_name", nodeName),
                    ("fingerprint", fingerprint), ("clock", "0"), ("history_limit", String(historyLimit)),
                    ("writer_id", writer.text), ("changes", "0"),
                    ("schema_version", String(PostgresReplicaSchema.version)),
                    ("writer_server", try serverIncarnation(db)),
                    // Nothing written yet, so nothing unsigned (``HeldWriteSigning``).
                    ("own_writes_signed", "1"),
                ] {
                    try db.run("INSERT INTO meta (key, value) VALUES (\(key), \(value))")
                }
                try db.run("INSERT INTO node (node_id, name) VALUES (\(nodeID.text), \(nodeName))")
                if writer != nodeID {
                    try db.run("INSERT INTO node (node_id, name) VALUES (\(writer.text), \(nodeName))")
                }
                // Started at 0, as in the SQLite store: a replica's first writer is no restore, and a
                // staleness check ("no writer started since the last sync") must not count it.
                try db.run("INSERT INTO writer (writer_id, started, reason) VALUES (\(writer.text), 0, 'init')")
            }
        }
        made = true
        return replica
    }

    /// Opens the replica in `schema`; refused if there is none, or if a newer lansync made it.
    public static func open(
        at location: PostgresLocation,
        schema: String,
        logger: Logger
    ) throws(StoreError)
        -> PostgresReplica
    {
        try checkName(schema)
        let replica = PostgresReplica(location: location, schema: schema, logger: logger)
        var opened = false
        defer { if !opened { replica.close() } }
        try replica.guarded {
            try replica.database.statements { db in
                guard
                    try db.value(
                        "SELECT count(*) FROM pg_tables WHERE schemaname = \(schema) AND tablename = 'meta'",
                        as: Int.self
                    ) == 1
                else {
                    throw StoreError.notInitialised(directory: "PostgreSQL schema \(schema)")
                }
                let version = try db.value("SELECT value FROM meta WHERE key = 'schema_version'", as: String.self)
                guard let version = version.flatMap(Int.init), version <= PostgresReplicaSchema.version else {
                    throw StoreError.newerSchema(path: "PostgreSQL schema \(schema)")
                }
            }
            // Columns a newer lansync added, asked for first: a replica that has them takes no
            // lock for them.
            let missing = try replica.database.statements { db in
                try db.value(
                    """
                    SELECT (SELECT count(*) FROM information_schema.columns
                        WHERE table_schema = \(schema) AND table_name = 'member' AND column_name IN ('signed', 'signed_at'))
                        + (SELECT count(*) FROM pg_tables WHERE schemaname = \(schema) AND tablename IN ('signed_run', 'run_leaf', 'member_certificate'))
                    """,
                    as: Int.self
                ) != 5
            }
            if missing {
                try replica.database.transaction(write: true) { db in
                    for statement in PostgresReplicaSchema.additions { try db.run(statement) }
                }
            }
        }
        opened = true
        return replica
    }

    /// Closes the replica's connection.
    public func close() { database.close() }

    /// A schema name lansync makes: lower-case letters, digits and `_`, not starting with a
    /// digit nor `pg_`, and not `public` (it goes into statements quoted, never as a parameter).
    static func checkName(_ schema: String) throws(StoreError) {
        let bytes = Array(schema.utf8)
        let fits =
            schema != "public" && !schema.hasPrefix("pg_") && (1...63).contains(bytes.count)
            && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
            && !(bytes[0] >= 0x30 && bytes[0] <= 0x39)
        guard fits else {
            throw .io(
                "not a PostgreSQL schema name lansync uses: \(schema) (lower-case letters, digits and _, 1 to 63, not starting with a digit)"
            )
        }
    }

    /// Runs `body`, passing a ``StoreError`` on and saying any other failure as PostgreSQL's.
    func guarded<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io("PostgreSQL: \(PostgresProblem(error))")
        }
    }
}

extension PostgresQuery.StringInterpolation {
    /// A count, an id or a counter as PostgreSQL's `bigint` (lansync's are below 2^63).
    mutating func appendInterpolation(bigint value: UInt64) {
        appendInterpolation(Int64(clamping: value))
    }
}
