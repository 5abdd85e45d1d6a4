public import LansyncCore
public import LansyncReplica
import NIOCore
import PostgresNIO

// A peer's batches and streams: each batch merged in one transaction through the merge core,
// its writers checked first (WriterCheck, as the SQLite store checks them); what a stream's
// batches cover joins the version vector when the stream completes.
extension PostgresReplica {
    /// `sender` said hello as `incarnation`: progress it made as another incarnation is dropped.
    /// Under the write lock, so that no merge of the old incarnation's writes its progress back.
    public func meet(_ sender: NodeID, incarnation: NodeID) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .peer)
                _ = try db.run(
                    "DELETE FROM stream WHERE peer_id = \(sender.text) AND incarnation <> \(incarnation.text)"
                )
            }
        }
    }

    /// What a session with `peer` starts from, read in one snapshot: the version vector and the
    /// writers folded (its hello tells the one without the other), how far `peer`'s last stream
    /// got, and when the replica last rejoined.
    public func sessionStart(with peer: NodeID) throws(StoreError) -> SessionStart {
        try guarded {
            try database.transaction(snapshot: true) { db in
                SessionStart(
                    vector: try Self.versionVector(db),
                    folded: try Self.folded(db),
                    resume: try Self.stream(db, from: peer),
                    rejoinedAt: try Self.rejoinedAt(db)
                )
            }
        }
    }

    /// `sender`'s stream is complete: what its batches covered joins the version vector, in one
    /// transaction; nothing if the replica rejoined since `rejoinedAt`.
    public func completeStream(from sender: NodeID, rejoinedAt: UInt64?) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .peer)
                if let rejoinedAt { try Self.requireNoRejoin(since: rejoinedAt, db) }
                try tx.completeStream(from: sender)
                try tx.finish()
            }
        }
    }

    /// Merges a peer's batch in one write transaction (``BatchIntake``): ``PeerBatchTransaction``.
    public func receive(
        _ batch: DeltaBatch,
        stream: IncomingStream?,
        terms: BatchTerms
    ) throws(StoreError) -> ReceivedBatch {
        try PeerBatches(store: self).receiveBatch(batch, stream: stream, terms: terms)
    }

    static func stream(
        _ db: BlockingPostgres.Statements,
        from peer: NodeID
    ) throws
        -> (covers: VersionVector, incarnation: NodeID)?
    {
        guard let row = try db.run("SELECT incarnation, covers FROM stream WHERE peer_id = \(peer.text)").first else {
            return nil
        }
        let (text, bytes) = try row.decode((String, ByteBuffer).self)
        guard let incarnation = NodeID(text: text) else { throw damaged("an incarnation in table stream: \(text)") }
        var reader = ByteReader(Array(bytes.readableBytesView))
        return (try reader.versionVector(), incarnation)
    }

    static func rejoinedAt(_ db: BlockingPostgres.Statements) throws -> UInt64 {
        try db.value("SELECT value FROM meta WHERE key = 'rejoined_at'", as: String.self).flatMap(UInt64.init) ?? 0
    }

    static func requireNoRejoin(since session: UInt64, _ db: BlockingPostgres.Statements) throws {
        let now = try rejoinedAt(db)
        guard now == session else { throw StoreError.rejoinedSince(session: session, replica: now) }
    }
}

extension PostgresWrite {
    /// Adds a batch's covers to `peer`'s stream (a stream of another incarnation starts over).
    func recordStream(from peer: NodeID, incarnation: NodeID, covers: VersionVector) throws {
        var progress = VersionVector()
        if let existing = try PostgresReplica.stream(db, from: peer), existing.incarnation == incarnation {
            progress = existing.covers
        }
        progress.join(covers)
        var writer = ByteWriter()
        writer.versionVector(progress)
        try db.run(
            """
            INSERT INTO stream (peer_id, incarnation, covers) VALUES (\(peer.text), \(incarnation.text), \(ByteBuffer(bytes: writer.bytes)))
            ON CONFLICT (peer_id) DO UPDATE SET incarnation = excluded.incarnation, covers = excluded.covers
            """
        )
    }

    /// `peer`'s stream is complete: what its batches covered joins the version vector.
    mutating func completeStream(from peer: NodeID) throws {
        guard let stream = try PostgresReplica.stream(db, from: peer) else { return }
        try raiseCounters(to: stream.covers)
        try db.run("DELETE FROM stream WHERE peer_id = \(peer.text)")
    }
}

/// The rows of a PostgreSQL replica that a batch merge (``BatchMerge``) and local edits
/// (``LocalEdits``) read and write, in a ``PostgresWrite``. An item's fields are read together the first time the merge asks for the
/// item (one round trip, where a field at a time would take one each), and kept in step with what
/// the merge saves.
struct PostgresRows: MergeRows, EditRows {
    var tx: PostgresWrite
    /// The items looked up so far, by row.
    private var items: [Int64: LoadedItem] = [:]

    let signer: (any WriteSigner)?

    init(tx: PostgresWrite, signer: (any WriteSigner)?) {
        self.tx = tx
        self.signer = signer
    }

    var clock: HybridLogicalClock {
        get { tx.clock }
        set { tx.clock = newValue }
    }

    mutating func findItem(_ id: ItemID) throws -> (row: Int64, collected: Bool)? {
        let item = try tx.loadItem(id)
        guard let row = item.row else { return nil }
        items[row] = item
        return (row, item.collected)
    }

    mutating func insertItem(_ id: ItemID) throws -> Int64 {
        let row = try tx.saveItem(id, row: nil, state: ItemState(id: id))
        items[row] = LoadedItem(row: row, state: ItemState(id: id), fieldRows: [:])
        return row
    }

    func markUncollected(item row: Int64) throws { try tx.db.run("UPDATE item SET collected = 0 WHERE id = \(row)") }

    mutating func loadField(item: Int64, name: FieldName) throws -> (row: Int64, state: FieldState)? {
        guard let loaded = items[item], let row = loaded.fieldRows[name], let state = loaded.state.fields[name] else {
            return nil
        }
        return (row, state)
    }

    func userFieldCount(item: Int64) throws -> Int { items[item]?.state.fields.keys.count { !$0.isReserved } ?? 0 }

    func keep(_ run: SignedRun, leaves: Int) throws {
        try tx.db.run(
            """
            INSERT INTO signed_run (node_id, first, last, leaves, key, signature)
            VALUES (\(run.writer.text), \(bigint: run.first), \(bigint: run.last), \(leaves), \(ByteBuffer(bytes: run.key)),
                \(ByteBuffer(bytes: run.signature)))
            ON CONFLICT (node_id, first) DO UPDATE SET last = excluded.last, leaves = excluded.leaves, key = excluded.key,
                signature = excluded.signature
            """
        )
    }

    func keepCertificate(_ certificate: [UInt8], of key: [UInt8]) throws {
        try tx.db.run(
            """
            INSERT INTO member_certificate (key, der) VALUES (\(ByteBuffer(bytes: key)), \(ByteBuffer(bytes: certificate)))
            ON CONFLICT (key) DO NOTHING
            """
        )
    }

    func keepGone(_ leaves: [RunLeaf], of writer: NodeID) throws { try tx.keepGone(leaves, of: writer) }

    func noteUnsignedOwnWrites() throws { try tx.db.run("DELETE FROM meta WHERE key = 'own_writes_signed'") }

    mutating func saveField(_ save: FieldSave) throws -> Int64 {
        let fieldRow = try tx.saveField(save)
        items[save.item]?.fieldRows[save.name] = fieldRow
        items[save.item]?.state.merge(save.name, save.new)
        return fieldRow
    }

    func updateItem(row: Int64, by change: DerivedChange) throws {
        guard !change.isEmpty else { return }
        try tx.db.run(
            """
            UPDATE item SET conflicts = conflicts + \(change.conflicts), type = coalesce(\(change.type), type),
                deleted = coalesce(\(change.deleted), deleted)
            WHERE id = \(row)
            """
        )
    }

    func history(ofField row: Int64?) throws -> [(dot: Dot, write: String)] { try tx.history(ofField: row) }

    func versionVector() throws -> VersionVector { try PostgresReplica.versionVector(tx.db) }

    mutating func claimWriter() throws -> ClaimedWriter {
        let writer = try tx.writer()
        return ClaimedWriter(id: writer.id, row: writer.row, counter: writer.counter)
    }

    func setCounter(of row: Int64, to counter: UInt64) throws { try tx.setCounter(of: row, to: counter) }

    mutating func loadItem(_ id: ItemID) throws -> LoadedItem { try tx.loadItem(id) }

    func saveItem(_ id: ItemID, row: Int64?, state: ItemState) throws -> Int64 {
        try tx.saveItem(id, row: row, state: state)
    }

    func trashWindow() throws -> UInt64 { try PostgresReplica.collectionSettings(tx.db).trashWindow }
}

/// A peer's batch in PostgreSQL: the writer check's reads, and the write transaction.
private struct PeerBatches: PeerBatchTransaction {
    typealias Rows = PostgresRows
    let store: PostgresReplica

    func checkWriters(of batch: DeltaBatch, under terms: BatchTerms) throws(StoreError) -> WriterCheck {
        try store.guarded {
            try store.database.statements { db in
                let check = try WriterCheck(batch, isKnown: { _ in false }) { unknown in
                    Set(
                        try db.run("SELECT node_id FROM node WHERE node_id = ANY(\(unknown.map(\.text)))")
                            .compactMap { NodeID(text: try $0.decode(String.self)) }
                    )
                }
                try check.check(terms.writers, allowance: terms.allowance) {
                    try db.value("SELECT count(*) FROM node", as: Int.self) ?? 0
                }
                return check
            }
        }
    }

    func withPeerBatch<T>(of stream: IncomingStream?, merge: BatchMerge<Rows>, _ body: Apply<T>) throws(StoreError) -> T
    {
        try store.guarded {
            try store.database.transaction(write: true) { db in
                let rows = PostgresRows(tx: try PostgresWrite(db, origin: .peer), signer: store.signing.current)
                var write = BatchWrite(rows: rows, merge: merge)
                let result = try body(&write)
                try write.rows.tx.finish()
                return result
            }
        }
    }
}

/// A peer's batch in PostgreSQL's write transaction: the steps of ``BatchReceipt`` in its SQL.
extension PostgresRows: BatchRows {
    func currentWriterID() throws -> NodeID { try tx.currentWriterID() }

    func heldCounter(of writer: NodeID) throws -> UInt64 { try tx.heldCounter(of: writer) }

    func retireCurrentWriter() throws { try tx.retireCurrentWriter() }

    func writerCount() throws -> Int { try tx.db.value("SELECT count(*) FROM node", as: Int.self) ?? 0 }

    func requireNoRejoin(since session: UInt64) throws { try PostgresReplica.requireNoRejoin(since: session, tx.db) }

    func held(of nodes: [NodeID]) throws -> VersionVector {
        var vector = VersionVector()
        for row in try tx.db.run("SELECT node_id, counter FROM node WHERE node_id = ANY(\(nodes.map(\.text)))") {
            let (text, counter) = try row.decode((String, Int64).self)
            guard let node = NodeID(text: text) else {
                throw PostgresReplica.damaged("a node id in table node: \(text)")
            }
            vector.raise(node, to: UInt64(clamping: counter))
        }
        return vector
    }

    func merged(changed: Int) throws {}

    mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws {
        if let stream {
            try tx.recordStream(from: stream.sender, incarnation: stream.incarnation, covers: covers)
            if stream.completes { try tx.completeStream(from: stream.sender) }
        } else {
            try tx.raiseCounters(to: covers)
        }
    }
}
