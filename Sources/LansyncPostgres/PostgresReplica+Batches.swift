public import LansyncCore
public import LansyncReplica
import PostgresNIO

// A peer's batches and streams: each batch merged in one transaction through the merge core,
// its writers checked first (WriterCheck, as the SQLite store checks them); what a stream's
// batches cover joins the version vector when the stream completes.
extension PostgresReplica {
    /// Merges a batch outside any stream (what it covers joins the version vector at once); how
    /// many fields changed. Applying it again changes nothing.
    @discardableResult
    func apply(
        _ batch: DeltaBatch,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters()
    ) throws(StoreError) -> Int {
        try merge(
            batch,
            stream: nil,
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked,
            writers: .standard,
            allowance: nil
        ).changed
    }

    /// Merges a batch of `sender`'s stream (sent while it wrote as `incarnation`), within
    /// `writers`' bounds with `allowance` writers still allowed to be new in this session. What
    /// the batch covers is recorded as the stream's progress; `completingStream` completes the
    /// stream in the same transaction. `rejoinedAt`: when the replica last rejoined as the
    /// session said hello (a batch of a session from before a rejoin is refused).
    ///
    /// With `refuse` (the relay), a field state it refuses is overruled by a write of the
    /// replica's own that keeps the field's value; writes `revoked` refuses are overruled the
    /// same way, and an item such a write created is deleted (``PeerOverrule``).
    ///
    /// A batch whose covers hold more of this replica's writer than it does witnesses a rollback
    /// of the replica: the writer is retired in the same transaction (``noteWitness(_:)``).
    @discardableResult
    public func receive(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal? = nil,
        revoked: RevokedWriters = RevokedWriters(),
        writers: WriterBounds = .standard,
        allowance: Int? = nil,
        rejoinedAt: UInt64? = nil,
        completingStream: Bool = false
    ) throws(StoreError) -> ReceivedBatch {
        try merge(
            batch,
            stream: BatchReceipt.Stream(
                sender: sender,
                incarnation: incarnation,
                rejoinedAt: rejoinedAt,
                completes: completingStream
            ),
            wallMilliseconds: wallMilliseconds,
            refuse: refuse,
            revoked: revoked,
            writers: writers,
            allowance: allowance
        )
    }

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

    private func merge(
        _ batch: DeltaBatch,
        stream: BatchReceipt.Stream?,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal?,
        revoked: RevokedWriters,
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
        let receipt = BatchReceipt(
            batch: batch,
            stream: stream,
            check: check,
            writers: writers,
            allowance: allowance ?? writers.perSession
        )
        return try guarded {
            try database.transaction(write: true) { db in
                var receiving = PostgresBatchWrite(
                    tx: try PostgresWrite(db, origin: .peer),
                    merge: PostgresBatchMerge(wallMilliseconds: wallMilliseconds, refuse: refuse, revoked: revoked)
                )
                let (changed, version) = try receipt.apply(in: &receiving)
                try receiving.tx.finish()
                return ReceivedBatch(
                    changed: changed,
                    newWriters: check.newWriters.count,
                    unverifiedCovers: check.unverifiedCovers,
                    version: version
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
/// replica holds, refused (a limit's reason) or overruled (a revoked node's writes) by a write of
/// the replica's own where it must be (``PeerOverrule``, the SQLite store's rules), saved; each
/// item's derived columns written once at the end from its state in memory (an item is loaded
/// once per batch); the items a revoked node created deleted.
struct PostgresBatchMerge {
    let wallMilliseconds: UInt64
    let refuse: FieldRefusal?
    let revoked: RevokedWriters
    private(set) var changed = 0
    private var items: [ItemID: LoadedFields] = [:]
    /// The items the batch changed, in the order it first changed them.
    private var touched: [ItemID] = []
    private var touchedSet = Set<ItemID>()
    /// The version vector as the batch began, read when first needed.
    private var vector: VersionVector?
    /// The replica's writer, read by the first overrule; its counter counts this batch's dots.
    private var writer: (id: NodeID, row: Int64, counter: UInt64)?
    private var createdByRevoked: [ItemID] = []

    init(wallMilliseconds: UInt64, refuse: FieldRefusal? = nil, revoked: RevokedWriters = RevokedWriters()) {
        self.wallMilliseconds = wallMilliseconds
        self.refuse = refuse
        self.revoked = revoked
    }

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
        // An item the replica does not hold (or purged) comes only with a write it has not seen.
        if item.row == nil, !update.change.isNews(to: try seen(in: &tx)) { return }
        if item.collected, let row = item.row {
            // A collected item takes in only writes the replica has not seen. One made since (a
            // late concurrent edit, a restore, another delete): the item holds more than its
            // tombstone again, and a later round judges it afresh.
            guard update.change.isNews(to: try seen(in: &tx)) else { return }
            try tx.db.run("UPDATE item SET collected = 0 WHERE id = \(row)")
            item.collected = false
            items[id] = item
        }
        let name = update.key.field
        let old = item.state.fields[name]
        var merged = (old ?? FieldState()).merged(with: update.change)
        guard merged != old else { return }
        var overruled: [FieldVersion] = []
        if let refuse,
            let reason = try refuse(update.key, merged, old, { item.state.fields.keys.count { !$0.isReserved } })
        {
            let timestamp = tx.clock.tick(wallMilliseconds: wallMilliseconds)
            let dot = try nextDot(in: &tx)
            PeerOverrule.refuse(update.change, in: &merged, old: old, reason: reason, dot: dot, timestamp: timestamp)
        } else if !revoked.isEmpty {
            overruled = try overruleRevoked(&merged, old: old, field: name, item: item, in: &tx)
        }
        try save(&item, name, old: old, new: merged, overruled: overruled, in: &tx)
    }

    /// Overrules the writes `revoked` refuses that field `name` of `id` already holds (a
    /// revocation learned after they came).
    mutating func overruleHeld(_ id: ItemID, field name: FieldName, in tx: inout PostgresWrite) throws {
        var item = try items[id] ?? tx.loadItem(id)
        items[id] = item
        guard item.row != nil, let old = item.state.fields[name] else { return }
        var merged = old
        let overruled = try overruleRevoked(&merged, old: old, field: name, item: item, in: &tx)
        guard merged != old else { return }
        try save(&item, name, old: old, new: merged, overruled: overruled, in: &tx)
    }

    private mutating func save(
        _ item: inout LoadedFields,
        _ name: FieldName,
        old: FieldState?,
        new: FieldState,
        overruled: [FieldVersion],
        in tx: inout PostgresWrite
    ) throws {
        let id = item.state.id
        if item.row == nil { item.row = try tx.saveItem(id, row: nil, state: ItemState(id: id)) }
        if touchedSet.insert(id).inserted { touched.append(id) }
        item.fieldRows[name] = try tx.saveField(
            item: item.row!,
            itemID: id,
            name: name,
            row: item.fieldRows[name],
            old: old,
            new: new,
            overruled: overruled
        )
        item.state.merge(name, new)
        items[id] = item
        changed += 1
    }

    /// Overrules in `merged` the live writes `revoked` refuses, keeping the field's value
    /// without them; the versions overruled (for history). An item a revoked node created is
    /// noted for deletion instead.
    private mutating func overruleRevoked(
        _ merged: inout FieldState,
        old: FieldState?,
        field: FieldName,
        item: LoadedFields,
        in tx: inout PostgresWrite
    ) throws -> [FieldVersion] {
        switch PeerOverrule.judge(merged, field: field, revoked: revoked) {
        case .stands: return []
        case .createdByRevoked:
            if !createdByRevoked.contains(item.state.id) { createdByRevoked.append(item.state.id) }
            return []
        case .overrule(let refused, let reason):
            let fieldRow = item.fieldRows[field]
            let kept = try PeerOverrule.keptValue(without: refused, merged: merged, old: old, revoked: revoked) {
                try tx.history(ofField: fieldRow)
            }
            let versions = merged.versions.filter { refused.contains($0.dot) }
            let dot = try nextDot(in: &tx)
            merged.overrule(
                rejecting: Array(refused),
                keeping: kept,
                reason: reason,
                dot: dot,
                timestamp: tx.clock.tick(wallMilliseconds: wallMilliseconds)
            )
            return versions
        }
    }

    /// The next dot of the replica's writer, read on first use.
    mutating func nextDot(in tx: inout PostgresWrite) throws -> Dot {
        if writer == nil { writer = try tx.writer() }
        writer!.counter += 1
        return Dot(node: writer!.id, counter: writer!.counter)
    }

    /// Writes the derived columns of every item the batch changed, deletes the items a revoked
    /// node created (after the derived columns, which a `_deleted` of this batch may have set),
    /// and sets the writer's counter.
    mutating func finish(_ tx: inout PostgresWrite) throws {
        for id in touched {
            guard let item = items[id], let row = item.row else { continue }
            _ = try tx.saveItem(id, row: row, state: item.state)
        }
        for id in createdByRevoked {
            guard var item = items[id], let row = item.row,
                !PeerOverrule.deletionStands(item.state.fields[.deleted], revoked: revoked)
            else { continue }
            try deleteCreatedByRevoked(&item, row: row, in: &tx)
            items[id] = item
            changed += 1
        }
        if let writer { try tx.setCounter(of: writer.row, to: writer.counter) }
    }

    /// Deletes an item a revoked node created after its cut: the bin, where `get` and `history`
    /// still show it.
    private mutating func deleteCreatedByRevoked(
        _ item: inout LoadedFields,
        row: Int64,
        in tx: inout PostgresWrite
    ) throws {
        let old = item.state.fields[.deleted]
        var state = old ?? FieldState()
        state.assign(
            .bool(true),
            dot: try nextDot(in: &tx),
            timestamp: tx.clock.tick(wallMilliseconds: wallMilliseconds)
        )
        item.fieldRows[.deleted] = try tx.saveField(
            item: row,
            itemID: item.state.id,
            name: .deleted,
            row: item.fieldRows[.deleted],
            old: old,
            new: state
        )
        item.state.merge(.deleted, state)
        _ = try tx.saveItem(item.state.id, row: row, state: item.state)
    }
}

/// A peer's batch in PostgreSQL's write transaction: the steps of ``BatchReceipt`` in its SQL.
struct PostgresBatchWrite: BatchReceiving {
    var tx: PostgresWrite
    var merge: PostgresBatchMerge

    func currentWriterID() throws -> NodeID { try tx.currentWriterID() }

    func heldCounter(of writer: NodeID) throws -> UInt64 { try tx.heldCounter(of: writer) }

    func retireCurrentWriter() throws { try tx.retireCurrentWriter() }

    func writerCount() throws -> Int { try tx.db.value("SELECT count(*) FROM node", as: Int.self) ?? 0 }

    func requireNoRejoin(since session: UInt64) throws { try PostgresReplica.requireNoRejoin(since: session, tx.db) }

    mutating func held(of nodes: [NodeID]) throws -> VersionVector {
        let vector = try merge.seen(in: &tx)
        return VersionVector(Dictionary(uniqueKeysWithValues: nodes.map { ($0, vector[$0]) }))
    }

    mutating func merge(_ updates: [FieldUpdate]) throws -> Int {
        for update in updates { try merge.merge(update, in: &tx) }
        try merge.finish(&tx)
        return merge.changed
    }

    mutating func record(covers: VersionVector, of stream: BatchReceipt.Stream?) throws {
        if let stream {
            try tx.recordStream(from: stream.sender, incarnation: stream.incarnation, covers: covers)
            if stream.completes { try tx.completeStream(from: stream.sender) }
        } else {
            try tx.raiseCounters(to: covers)
        }
    }

    func versionVector() throws -> VersionVector { try PostgresReplica.versionVector(tx.db) }
}
