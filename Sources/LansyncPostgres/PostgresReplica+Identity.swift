public import LansyncCore
public import LansyncReplica
import PostgresNIO
import Synchronization

// The writer a PostgreSQL replica issues its own writes under, and the proof that it may go on
// (Docs/RELAY.md, "Writers"): the SQLite store proves a writer's continuity with a marker
// outside the file; here the proof is the server itself.
extension PostgresReplica {
    /// Checks the writer's continuity now, as a relay process starts: a replica on a server
    /// other than the one its writer started on (restarted, restored, a promoted standby) takes a
    /// new writer before it says hello. Returns the writer to announce.
    @discardableResult
    public func renewWriterIfUnproven() throws(StoreError) -> NodeID {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .local)
                let writer = try tx.writer()
                try tx.finish()
                return writer.id
            }
        }
    }

    /// Takes a peer's version vector (its hello) into account: if the peer holds more of this
    /// replica's current writer than the replica does, the replica was rolled back, and the
    /// writer is retired (the next write of its own starts a new one). True if retired now.
    @discardableResult
    public func noteWitness(_ peer: VersionVector) throws(StoreError) -> Bool {
        // Read first: a session start should not take the write lock for nothing.
        let current = try info().writerID
        guard peer[current] > (try versionVector())[current] else { return false }
        return try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .local)
                return try tx.retireWriterIfWitnessed(by: peer)
            }
        }
    }

    /// While ``commitsElsewhere()`` listens, how many other processes' commits it heard and the
    /// wall clock's ten seconds (a listening connection gone silent, half-open behind a firewall,
    /// is then made up for within ten seconds); else a mark that differs at every call, so that
    /// the node's poll for changes nobody announced reads the version vector every time (one
    /// query per poll interval).
    public func quickChangeMark() -> [Int] {
        let heard = self.heard.withLock { $0 }
        return heard.listening
            ? [heard.count, Int(WallClock.milliseconds / 10_000)] : [-1, polls.add(1, ordering: .relaxed).newValue]
    }

    /// Always nil: the server keeps its pages sound (its write-ahead log, and checksums where
    /// the cluster has them), and a field state that does not decode fails the call that read
    /// it (``StoreError/corrupt(path:detail:)``) rather than marking the replica.
    public var damage: String? { nil }

    /// Which server this is, and since when it runs: its system identifier (new for every
    /// `initdb`, kept by a physical copy) and its start time (new at every start, including the
    /// recovery after a crash, and different on a promoted standby, which started before it was
    /// promoted). A database rolled back to an earlier point is on another server or was
    /// restarted, so it never shows the incarnation its writer started under.
    static func serverIncarnation(_ db: BlockingPostgres.Statements) throws -> String {
        guard let incarnation = try db.value("SELECT \(unescaped: incarnationSQL)", as: String.self) else {
            throw damaged("the server did not say which it is")
        }
        return incarnation
    }

    /// ``serverIncarnation(_:)``'s expression, for a query that reads it beside others.
    static let incarnationSQL =
        "(SELECT system_identifier FROM pg_control_system())::text || ':' || extract(epoch FROM pg_postmaster_start_time())::text"
}

extension PostgresWrite {
    /// The writer for this transaction's own writes: the current one if no peer has witnessed a
    /// rollback and it names this replica's node; else a new one, started in this transaction.
    /// (A writer that started on another server incarnation was replaced as the transaction
    /// began.)
    mutating func writer() throws -> (id: NodeID, row: Int64, counter: UInt64) {
        var meta: [String: String] = [:]
        for row in try db.run(
            "SELECT key, value FROM meta WHERE key IN ('writer_id', 'writer_retired', 'node_id', 'node_name')"
        ) {
            let (key, value) = try row.decode((String, String).self)
            meta[key] = value
        }
        guard let current = meta["writer_id"].flatMap(NodeID.init(text:)),
            let node = meta["node_id"].flatMap(NodeID.init(text:))
        else {
            throw PostgresReplica.damaged("the writer or node id in table meta is missing")
        }
        let retired = meta["writer_retired"] == "1" || meta["writer_retired"] == PostgresReplica.retiredForRole
        let named = current == node || current.isWriter(of: node)
        if !retired, named {
            let row = try nodeRow(current)
            let counter = try db.value("SELECT counter FROM node WHERE id = \(row)", as: Int64.self) ?? 0
            return (current, row, UInt64(counter))
        }
        let forRole = meta["writer_retired"] == PostgresReplica.retiredForRole
        let reason: WriterRecord.Reason = forRole ? .role : retired ? .witness : .named
        // A rolled-back database's feed numbers were given before: jump past them (as in SQLite).
        if retired, !forRole {
            try PostgresReplica.raiseMeta("change_floor", to: Int64(clamping: ReplicaConstants.changeSequenceFloor), db)
        }
        let fresh = NodeID.writer(for: node)
        try startWriter(fresh, name: meta["node_name"], reason: reason)
        return (fresh, try nodeRow(fresh), 0)
    }

    /// The current writer's id, without a claim (for reads that only compare with it).
    func currentWriter() throws -> NodeID {
        guard
            let id = try db.value("SELECT value FROM meta WHERE key = 'writer_id'", as: String.self)
                .flatMap(NodeID.init(text:))
        else { throw PostgresReplica.damaged("the writer id in table meta is missing") }
        return id
    }

    /// Makes `id` the current writer (recorded in table `writer` with why), proven on this
    /// server incarnation.
    mutating func startWriter(_ id: NodeID, name: String?, reason: WriterRecord.Reason) throws {
        try db.run(
            """
            INSERT INTO node (node_id, name) VALUES (\(id.text), \(name))
            ON CONFLICT (node_id) DO UPDATE SET name = excluded.name
            """
        )
        for (key, value) in [
            ("writer_id", id.text), ("writer_retired", "0"),
            ("writer_server", try PostgresReplica.serverIncarnation(db)),
        ] {
            try PostgresReplica.setMeta(key, value, db)
        }
        try db.run(
            """
            INSERT INTO writer (writer_id, started, reason) VALUES (\(id.text), \(bigint: WallClock.milliseconds), \(reason.rawValue))
            ON CONFLICT (writer_id) DO NOTHING
            """
        )
    }

}

// The witness rule (``WriterWitnessing/retireWriterIfWitnessed(by:batch:)``) is written once, in
// LansyncReplica; these are its steps in PostgreSQL.
extension PostgresWrite: WriterWitnessing {
    func currentWriterID() throws -> NodeID { try currentWriter() }

    func heldCounter(of writer: NodeID) throws -> UInt64 {
        let held = try db.value("SELECT counter FROM node WHERE node_id = \(writer.text)", as: Int64.self) ?? 0
        return UInt64(max(0, held))
    }

    func retireCurrentWriter() throws { try PostgresReplica.setMeta("writer_retired", "1", db) }
}
