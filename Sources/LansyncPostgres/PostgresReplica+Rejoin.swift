public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Coming back after being away (Docs/MERGE.md, "Coming back after being away"), as the SQLite
// store does it: what only this replica holds is kept aside (table rejoin_pending), the replica
// is emptied and starts a new writer, and once the snapshot is in, what was kept aside is
// re-issued under the new writer.
extension PostgresReplica {
    /// True if writes kept aside by a rejoin wait to be re-issued.
    public func hasRejoinPending() throws(StoreError) -> Bool {
        try guarded {
            try database.statements { db in
                try db.value("SELECT EXISTS (SELECT 1 FROM rejoin_pending)", as: Bool.self) ?? false
            }
        }
    }

    /// Starts a rejoin, in one transaction (``LansyncStore/ReplicaStore/rejoin(keepingUnseenBy:adopting:now:)``):
    /// keeps aside every field state holding a write of the replica's own writers that `peer`
    /// lacks, empties the replica, starts a new writer, and takes `reports` as its view of the
    /// members (the members it forgot stay forgotten).
    @discardableResult
    public func rejoin(
        keepingUnseenBy peer: VersionVector,
        adopting reports: [MemberReport],
        now: UInt64
    ) throws(StoreError) -> RejoinStart {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .local)
                let info = try Self.info(db)
                let own = Set(try Self.ownWriters(db))
                var start = RejoinStart()
                var items = Set<String>()
                for writer in own.sorted() {
                    let rows = try db.run(
                        """
                        SELECT DISTINCT i.item_id, f.name, f.state FROM version v
                        JOIN node n ON n.id = v.node JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                        WHERE n.node_id = \(writer.text) AND v.counter > \(bigint: peer[writer])
                        """
                    )
                    for row in rows {
                        let (item, name, bytes) = try row.decode((String, String, ByteBuffer).self)
                        if try tx.keepAside(item: item, name: name, try Self.decode(bytes, of: "\(item).\(name)")) {
                            start.fields += 1
                            items.insert(item)
                        }
                    }
                }
                start.items = items.count
                for item in items
                where try tx.wasCreatedOutOfSight(item: item, by: own, peer: peer)
                    && !tx.wouldLoseItsDelete(item: item, writers: own, peer: peer)
                {
                    try db.run("UPDATE rejoin_pending SET created = true WHERE item_id = \(item)")
                }
                try tx.emptyReplica()
                try tx.startWriter(NodeID.writer(for: info.nodeID), name: info.nodeName, reason: .rejoin)
                try Self.setMeta("rejoined_at", String(now), db)
                // An operator's name was for this wait; a later copy put back waits anew.
                try db.run("DELETE FROM meta WHERE key = 'rejoin_from'")
                try db.run("DELETE FROM member WHERE forgotten_at IS NULL")
                try Self.recordReports(reports, gossiped: true, db)
                try tx.finish()
                return start
            }
        }
    }

    /// Re-issues what a rejoin kept aside, once the snapshot is in
    /// (``LansyncStore/ReplicaStore/reissueRejoinPending(now:)``): same values, same concurrency,
    /// under the current writer; dropped for items the snapshot holds deleted, or does not hold
    /// unless this replica created them out of sight. Nil if nothing waited.
    public func reissueRejoinPending(now: UInt64) throws(StoreError) -> RejoinOutcome? {
        try guarded {
            try database.transaction(write: true) { db in
                let tx = try PostgresWrite(db, origin: .local)
                let kept = try db.run("SELECT item_id, name, state, created FROM rejoin_pending ORDER BY item_id, name")
                guard !kept.isEmpty else { return nil }
                let own = Set(try Self.ownWriters(db))
                let vector = try Self.versionVector(db)
                var pending = KeptAsideWrites(
                    own: own,
                    held: VersionVector(Dictionary(uniqueKeysWithValues: own.map { ($0, vector[$0]) }))
                )
                for row in kept {
                    let (text, name, bytes, created) = try row.decode((String, String, ByteBuffer, Bool).self)
                    try pending.take(
                        FieldKey(item: ItemID(unchecked: text), field: FieldName(unchecked: name)),
                        deleted: try db.value("SELECT deleted FROM item WHERE item_id = \(text)", as: Bool.self),
                        created: created
                    ) { try Self.decode(bytes, of: text) }
                }
                var rows = PostgresRows(tx: tx, signer: signing.current)
                var merge = BatchMerge<PostgresRows>(wallMilliseconds: now)
                let outcome = try merge.reissue(pending, in: &rows)
                try db.run("DELETE FROM rejoin_pending")
                try rows.tx.finish()
                return outcome
            }
        }
    }

    /// This replica's own write identities: its node id and every writer it started.
    static func ownWriters(_ db: BlockingPostgres.Statements) throws -> [NodeID] {
        Array(Set([try info(db).nodeID] + (try writerIDs(db)))).sorted()
    }
}

extension PostgresWrite {
    /// Keeps a field state aside for re-issue (joined with one kept before, should a rejoin be
    /// interrupted and start again); true if the field was not kept yet.
    func keepAside(item: String, name: String, _ state: FieldState) throws -> Bool {
        var merged = state
        let existing = try db.value(
            "SELECT state FROM rejoin_pending WHERE item_id = \(item) AND name = \(name)",
            as: ByteBuffer.self
        )
        if let existing { merged.merge(try PostgresReplica.decode(existing, of: "\(item).\(name)")) }
        try db.run(
            """
            INSERT INTO rejoin_pending (item_id, name, state) VALUES (\(item), \(name), \(ByteBuffer(bytes: merged.encoded)))
            ON CONFLICT (item_id, name) DO UPDATE SET state = excluded.state
            """
        )
        return existing == nil
    }

    /// Empties the replica of its items (for a rejoin): items, fields, versions, history, the
    /// streams under way, the version vector, the stability ledger and the folds. The feed's
    /// numbering goes on past what it gave, and its floor moves there.
    mutating func emptyReplica() throws {
        let highest = try db.value("SELECT coalesce(max(seq), 0) FROM field", as: Int64.self) ?? 0
        for table in ["history", "version", "field", "item", "stream"] {
            try db.run("DELETE FROM \(unescaped: table)")
        }
        try db.run("UPDATE node SET counter = 0")
        try db.run("DELETE FROM meta WHERE key IN ('stability', 'folded')")
        for key in ["change_floor", "feed_floor"] { try PostgresReplica.raiseMeta(key, to: highest, db) }
        noteChange()
    }
}

extension PostgresWrite: RejoinReading {
    func historyDots(ofField row: Int64) throws -> [Dot?] {
        try db.run("SELECT n.node_id, h.counter FROM history h JOIN node n ON n.id = h.node WHERE h.field = \(row)")
            .map { entry in
                let (text, counter) = try entry.decode((String, Int64).self)
                return NodeID(text: text).map { Dot(node: $0, counter: UInt64(clamping: counter)) }
            }
    }

    func heldField(item: String, _ name: FieldName) throws -> (row: Int64, state: FieldState, deleted: Bool)? {
        guard
            let row = try db.run(
                """
                SELECT f.id, f.state, i.deleted FROM field f JOIN item i ON i.id = f.item
                WHERE i.item_id = \(item) AND f.name = \(name.rawValue)
                """
            ).first
        else { return nil }
        let (id, bytes, deleted) = try row.decode((Int64, ByteBuffer, Bool).self)
        return (id, try PostgresReplica.decode(bytes, of: "\(item).\(name.rawValue)"), deleted)
    }
}
