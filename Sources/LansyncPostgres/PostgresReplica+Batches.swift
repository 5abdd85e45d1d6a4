import LansyncCore
import LansyncStore
import PostgresNIO

// A peer's batches and streams: each batch merged in one transaction through the merge core,
// its writers checked first (WriterCheck, as the SQLite store checks them); what a stream's
// batches cover joins the version vector when the stream completes.
extension PostgresReplica {
    /// Merges a batch outside any stream (what it covers joins the version vector at once); how
    /// many fields changed. Applying it again changes nothing.
    @discardableResult
    func apply(_ batch: DeltaBatch, wallMilliseconds: UInt64) throws(StoreError) -> Int {
        try merge(batch, stream: nil, wallMilliseconds: wallMilliseconds, writers: .standard, allowance: nil).changed
    }

    /// Merges a batch of `sender`'s stream (sent while it wrote as `incarnation`), within
    /// `writers`' bounds with `allowance` writers still allowed to be new in this session. What
    /// the batch covers is recorded as the stream's progress; `completingStream` completes the
    /// stream in the same transaction. `rejoinedAt`: when the replica last rejoined as the
    /// session said hello (a batch of a session from before a rejoin is refused).
    ///
    /// Internal, as ``apply(_:wallMilliseconds:)``, while a relay's limits, revocations,
    /// collected items and a rollback a batch witnesses are still to be ported.
    @discardableResult
    func receive(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        writers: WriterBounds = .standard,
        allowance: Int? = nil,
        rejoinedAt: UInt64? = nil,
        completingStream: Bool = false
    ) throws(StoreError) -> ReceivedBatch {
        try merge(
            batch,
            stream: (sender, incarnation, rejoinedAt, completingStream),
            wallMilliseconds: wallMilliseconds,
            writers: writers,
            allowance: allowance
        )
    }

    /// `sender` said hello as `incarnation`: progress it made as another incarnation is dropped.
    /// Under the write lock, so that no merge of the old incarnation's writes its progress back.
    func meet(_ sender: NodeID, incarnation: NodeID) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .peer)
                _ = try db.run(
                    "DELETE FROM stream WHERE peer_id = \(sender.text) AND incarnation <> \(incarnation.text)"
                )
            }
        }
    }

    /// What a session with `peer` starts from, read in one snapshot. (No writer is folded here
    /// yet: `folded` is empty.)
    func sessionStart(with peer: NodeID) throws(StoreError) -> SessionStart {
        try guarded {
            try database.transaction(snapshot: true) { db in
                SessionStart(
                    vector: try Self.versionVector(db),
                    folded: VersionVector(),
                    resume: try Self.stream(db, from: peer),
                    rejoinedAt: try Self.rejoinedAt(db)
                )
            }
        }
    }

    /// `sender`'s stream is complete: what its batches covered joins the version vector, in one
    /// transaction; nothing if the replica rejoined since `rejoinedAt`.
    func completeStream(from sender: NodeID, rejoinedAt: UInt64?) throws(StoreError) {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .peer)
                if let rejoinedAt { try Self.requireNoRejoin(since: rejoinedAt, db) }
                try tx.completeStream(from: sender)
                try tx.finish()
            }
        }
    }

    private func merge(
        _ batch: DeltaBatch,
        stream: (sender: NodeID, incarnation: NodeID, rejoinedAt: UInt64?, completes: Bool)?,
        wallMilliseconds: UInt64,
        writers: WriterBounds,
        allowance: Int?
    ) throws(StoreError) -> ReceivedBatch {
        // Before the write lock: the look-ups are reads, and a refused batch never takes it.
        let check = try guarded {
            try database.statements { db in
                let check = try WriterCheck(batch, isKnown: { _ in false }) { unknown in
                    Set(
                        try db.run("SELECT node_id FROM node WHERE node_id = ANY(\(unknown.map(\.text)))")
                            .compactMap { NodeID(text: try $0.decode(String.self)) }
                    )
                }
                try check.check(writers, allowance: allowance ?? writers.perSession) {
                    try db.value("SELECT count(*) FROM node", as: Int.self) ?? 0
                }
                return check
            }
        }
        return try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .peer)
                // Checked again under the write lock: another session, or another relay process,
                // may have brought writers since the read.
                try check.check(writers, allowance: allowance ?? writers.perSession) {
                    try db.value("SELECT count(*) FROM node", as: Int.self) ?? 0
                }
                if let session = stream?.rejoinedAt { try Self.requireNoRejoin(since: session, db) }
                var merge = PostgresBatchMerge(wallMilliseconds: wallMilliseconds)
                if let base = batch.base, !base.isEmpty {
                    let vector = try merge.seen(in: &tx)
                    let held = VersionVector(Dictionary(uniqueKeysWithValues: base.nodes.map { ($0, vector[$0]) }))
                    guard batch.isApplicable(to: held) else { throw StoreError.staleDelta(base: base, held: held) }
                }
                for update in batch.updates { try merge.merge(update, in: &tx) }
                try merge.finish(&tx)
                if let stream {
                    try tx.recordStream(from: stream.sender, incarnation: stream.incarnation, covers: check.covers)
                    if stream.completes { try tx.completeStream(from: stream.sender) }
                } else {
                    try tx.raiseCounters(to: check.covers)
                }
                try tx.finish()
                let told = merge.changed > 0 || stream?.completes == true
                return ReceivedBatch(
                    changed: merge.changed,
                    newWriters: check.newWriters.count,
                    unverifiedCovers: check.unverifiedCovers,
                    version: told ? try Self.versionVector(db) : nil
                )
            }
        }
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

/// One peer batch merged into one write transaction: each field state merged with what the
/// replica holds, saved, and each item's derived columns written once at the end from its
/// state in memory (an item is loaded once per batch).
struct PostgresBatchMerge {
    let wallMilliseconds: UInt64
    private(set) var changed = 0
    private var items: [ItemID: LoadedFields] = [:]
    /// The items the batch changed, in the order it first changed them.
    private var touched: [ItemID] = []
    private var touchedSet = Set<ItemID>()
    /// The version vector as the batch began, read when first needed.
    private var vector: VersionVector?

    init(wallMilliseconds: UInt64) { self.wallMilliseconds = wallMilliseconds }

    mutating func seen(in tx: inout PostgresWrite) throws -> VersionVector {
        if let vector { return vector }
        let read = try PostgresReplica.versionVector(tx.db)
        vector = read
        return read
    }

    /// Merges one field's change.
    mutating func merge(_ update: FieldUpdate, in tx: inout PostgresWrite) throws {
        for version in update.change.versions {
            tx.clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
        }
        let id = update.key.item
        var item = try items[id] ?? tx.loadItem(id)
        items[id] = item
        // An item the replica does not hold comes only with a write it has not seen.
        if item.row == nil, !update.change.isNews(to: try seen(in: &tx)) { return }
        let old = item.state.fields[update.key.field]
        let merged = (old ?? FieldState()).merged(with: update.change)
        guard merged != old else { return }
        if item.row == nil { item.row = try tx.saveItem(id, row: nil, state: ItemState(id: id)) }
        if touchedSet.insert(id).inserted { touched.append(id) }
        item.fieldRows[update.key.field] = try tx.saveField(
            item: item.row!,
            itemID: id,
            name: update.key.field,
            row: item.fieldRows[update.key.field],
            old: old,
            new: merged
        )
        item.state.merge(update.key.field, merged)
        items[id] = item
        changed += 1
    }

    /// Writes the derived columns of every item the batch changed.
    func finish(_ tx: inout PostgresWrite) throws {
        for id in touched {
            guard let item = items[id], let row = item.row else { continue }
            _ = try tx.saveItem(id, row: row, state: item.state)
        }
    }
}
