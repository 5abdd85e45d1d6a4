import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Coming back after being away (Docs/MERGE.md, "Coming back after being away"): a member whose
// peers may have collected without it does not merge its old state; it keeps aside what only it
// holds, takes a snapshot, and re-issues those writes under a new writer.
extension ReplicaStore {
    /// Since when this replica is away itself, if it is: it has not heard of the relay (the
    /// cluster's authority; meta `relay_id`, learned from its hello) for longer than the
    /// cluster's away window, directly or through gossip, nor rejoined since; in a cluster
    /// without a relay, it has not been up to date with any peer for that long. Nil if it is
    /// not away, is the relay, or never met anyone. A replica away itself judges no one away:
    /// it refuses no one's state and collects nothing without them, so that only the relay's
    /// side of a split cluster collects without the other.
    public func awaySince(now: UInt64) throws(StoreError) -> UInt64? {
        try read { db in try Self.awaySince(db: db, now: now, settings: try Self.collectionSettings(db: db)) }
    }

    static func awaySince(db: Database, now: UInt64, settings: CollectionSettings) throws -> UInt64? {
        let heard: Int64
        if let relay = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'relay_id'") {
            guard relay != (try Transaction.nodeID(db: db)).text else { return nil }
            heard = try Int64.fetchOne(db, sql: "SELECT seen_at FROM member WHERE node_id = ?", arguments: [relay]) ?? 0
        } else {
            heard = try Int64.fetchOne(db, sql: "SELECT max(last_sync) FROM peer") ?? 0
        }
        // An operator's word that this copy is current counts as news (`lansync backup accept`).
        let accepted = try acceptedAt(db: db)
        return settings.awaySince(
            heard: max(UInt64(clamping: heard), accepted),
            rejoinedAt: try Self.rejoinedAt(db: db),
            now: now
        )
    }

    /// Since when this replica's own state is older than the cluster's away window, if it is:
    /// it was last up to date with a peer (or rejoined) longer ago than the window, and a new
    /// writer started since for a reason other than a rejoin (a copy put back, a reboot without
    /// the marker, a repair, a rollback a peer witnessed). Such a replica may lack deletes whose
    /// tombstones the others purged while it was a backup on a shelf, so it merges with no one
    /// and judges no one away until it rejoins from a snapshot (of the relay, or without one of
    /// a current peer: `Node.rejoinIfStale`). A replica that
    /// merely stayed alone that long holds all it ever held: the others judge it away instead.
    /// Nil otherwise, or if it never met anyone.
    public func staleSince(now: UInt64) throws(StoreError) -> UInt64? {
        try read { db in try Self.staleSince(db: db, now: now, settings: try Self.collectionSettings(db: db)) }
    }

    static func staleSince(db: Database, now: UInt64, settings: CollectionSettings) throws -> UInt64? {
        let restarted = try Int64.fetchOne(
            db,
            sql: "SELECT max(started) FROM writer WHERE reason <> ?",
            arguments: [WriterRecord.Reason.rejoin.rawValue]
        )
        let synced = UInt64(clamping: try Int64.fetchOne(db, sql: "SELECT max(last_sync) FROM peer") ?? 0)
        return settings.staleSince(
            synced: max(synced, try acceptedAt(db: db)),
            rejoinedAt: try Self.rejoinedAt(db: db),
            restarted: restarted.map { UInt64(clamping: $0) },
            now: now
        )
    }

    /// meta `accepted_at`: when an operator last said this replica, put back from a copy, is
    /// current (`lansync backup accept`; 0 if never). It counts as a moment the replica was up
    /// to date (``staleSince(now:)``).
    static func acceptedAt(db: Database) throws -> UInt64 {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'accepted_at'").flatMap(UInt64.init) ?? 0
    }

    /// Says this replica, put back from a copy, is current as of `now`: it stops waiting to
    /// rejoin from a current member, and the others take it as one (`lansync backup accept`).
    /// For when every replica of the cluster is a copy put back, which otherwise wait for each
    /// other for good (Docs/MERGE.md, "Stale or away"). Returns since when it was stale, nil if
    /// it was not (nothing is written then).
    public func acceptAsCurrent(now: UInt64) throws(StoreError) -> UInt64? {
        try setMetaIfStale("accepted_at", String(now), now: now)
    }

    /// Names the member a stale replica (a copy put back) may rejoin from even though it is away
    /// itself (meta `rejoin_from`, `lansync backup accept --from NAME`): for a relay that waits
    /// for a current member while every member that is no copy stopped hearing of it. Returns
    /// since when the replica was stale, nil if it is not (nothing is written then).
    public func acceptRejoin(from member: NodeID, now: UInt64) throws(StoreError) -> UInt64? {
        try setMetaIfStale("rejoin_from", member.text, now: now)
    }

    /// An operator's word on a stale replica, in one transaction with the judgement that it is
    /// stale: since when it was, or nil (and nothing written) if it is not.
    private func setMetaIfStale(_ key: String, _ value: String, now: UInt64) throws(StoreError) -> UInt64? {
        try guarded {
            try database.write { db in
                guard let stale = try Self.staleSince(db: db, now: now, settings: try Self.collectionSettings(db: db))
                else { return nil }
                try Transaction.setMeta(key, value, db: db)
                return stale
            }
        }
    }

    /// The member an operator named to rejoin from (``acceptRejoin(from:now:)``), nil if none.
    public func acceptedRejoinSource() throws(StoreError) -> NodeID? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'rejoin_from'").flatMap(NodeID.init(text:))
        }
    }

    /// The cluster's relay as this replica learnt it (meta `relay_id`), nil if it never met one.
    public func relayID() throws(StoreError) -> NodeID? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'relay_id'").flatMap(NodeID.init(text:))
        }
    }

    /// Records which node is the cluster's relay (a hello of role relay, or this node run as the
    /// relay): the member whose news tells a replica that it is not away itself.
    public func noteRelay(_ relay: NodeID) throws(StoreError) {
        try guarded {
            try database.write { db in
                guard try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'relay_id'") != relay.text
                else { return }
                try Transaction.setMeta("relay_id", relay.text, db: db)
            }
        }
    }

    /// When `node` was last heard of (or forgotten, if later), if it is away (silent past the
    /// away window) or forgotten here: a member this replica may have collected without. Nil if
    /// it is active or unknown.
    public func memberAwaySince(_ node: NodeID, now: UInt64) throws(StoreError) -> UInt64? {
        try read { db in
            let settings = try Self.collectionSettings(db: db)
            return try Self.memberReports(db: db).first { $0.nodeID == node }?.awaySince(now: now, settings: settings)
        }
    }

    /// meta `rejoined_at`: when this replica last rejoined from a snapshot (0 if never).
    public func rejoinedAt() throws(StoreError) -> UInt64 {
        try read { db in try Self.rejoinedAt(db: db) }
    }

    static func rejoinedAt(db: Database) throws -> UInt64 {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'rejoined_at'").flatMap(UInt64.init) ?? 0
    }

    /// True if writes kept aside by a rejoin wait to be re-issued.
    public func hasRejoinPending() throws(StoreError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM rejoin_pending)") ?? false }
    }

    /// Starts a rejoin, in one transaction: keeps aside every field state holding a write of this
    /// replica's own writers that `peer` (the vector of the peer that sent this node away) lacks,
    /// then empties the replica (items, fields, history, the version index and the replica's
    /// version vector; streams under way; the stability ledger) and starts a new writer. Its
    /// identity, peers, statements and settings stay; what it knew of the members gives way to
    /// `reports` (the peer's view, its own report first: who is away is the peer's judgement
    /// now), except the members it forgot. The change feed's numbering goes on
    /// past what it gave, and a reader behind it is told to start again (``StoreError/feedCollected(since:floor:)``).
    /// The next complete stream from a peer is the snapshot; ``reissueRejoinPending(now:)`` then
    /// re-issues what was kept aside.
    @discardableResult
    public func rejoin(
        keepingUnseenBy peer: VersionVector,
        adopting reports: [MemberReport] = [],
        now: UInt64
    ) throws(StoreError) -> RejoinStart {
        try guarded {
            try write(.full, foreignKeyChecks: false) { tx, me in
                let own = try Self.ownWriters(db: tx.db)
                var start = RejoinStart()
                var items = Set<String>()
                for writer in own {
                    let rows = try Row.fetchAll(
                        tx.db,
                        sql: """
                            SELECT DISTINCT i.item_id, f.name, f.state FROM version v
                            JOIN node n ON n.id = v.node JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                            WHERE n.node_id = ? AND v.counter > ?
                            """,
                        arguments: [writer.text, Int64(clamping: peer[writer])]
                    )
                    for row in rows {
                        let (item, name) = (row[0] as String, row[1] as String)
                        let state = try StoredState.decode(Array(row[2] as Data), db: tx.db, nodes: nodeRows)
                        if try tx.keepAside(item: item, name: name, state) {
                            start.fields += 1
                            items.insert(item)
                        }
                    }
                }
                start.items = items.count
                for item in items
                where try tx.wasCreatedOutOfSight(item: item, by: Set(own), peer: peer)
                    && !tx.wouldLoseItsDelete(item: item, writers: Set(own), peer: peer)
                {
                    try tx.db.execute(sql: "UPDATE rejoin_pending SET created = 1 WHERE item_id = ?", arguments: [item])
                }
                let stamp = try tx.emptyReplica()
                let writer = NodeID.writer(for: me.nodeID)
                try Transaction.startWriter(writer, name: me.nodeName, reason: .rejoin, db: tx.db)
                tx.writerMarker = (writer, stamp)
                try tx.setMeta("rejoined_at", String(now))
                // An operator's name was for this wait; a later copy put back waits anew.
                try tx.db.execute(sql: "DELETE FROM meta WHERE key = 'rejoin_from'")
                try tx.db.execute(sql: "DELETE FROM member WHERE forgotten_at IS NULL")
                try Self.recordReports(reports, gossiped: true, own: me.nodeID, db: tx.db)
                return .commit(start)
            }
        }
    }

    /// Re-issues what a rejoin kept aside, once the snapshot is in (a complete stream from a
    /// peer): every write of this replica's own writers that the replica still lacks is named
    /// anew under the current writer (``FieldState/reissued(by:unseenBy:renamed:)``: same values,
    /// same concurrency) and merged, except into items the snapshot holds deleted, or does not
    /// hold at all unless this replica created them while away (the others collected them) and,
    /// holding them deleted, keeps aside a write of its own to `_deleted`: a member coming back
    /// never brings a deleted item back. Nil if nothing waited.
    public func reissueRejoinPending(now: UInt64) throws(StoreError) -> RejoinOutcome? {
        try guarded {
            try write { tx, me -> WriteEnd<RejoinOutcome?> in
                let kept = try Row.fetchAll(tx.db, sql: "SELECT item_id, name, state, created FROM rejoin_pending")
                guard !kept.isEmpty else { return .rollback(nil) }
                let own = Set(try Self.ownWriters(db: tx.db))
                var pending = KeptAsideWrites(own: own, held: try tx.versionVector(of: Array(own)))
                for row in kept {
                    let item = ItemID(unchecked: row[0])
                    let deleted = try Bool.fetchOne(
                        tx.db,
                        sql: "SELECT deleted FROM item WHERE item_id = ?",
                        arguments: [item.rawValue]
                    )
                    try pending.take(
                        FieldKey(item: item, field: FieldName(unchecked: row[1])),
                        deleted: deleted,
                        created: row[3]
                    ) { try StoredState.decode(Array(row[2] as Data), db: tx.db, nodes: nodeRows) }
                }
                var rows = SQLiteRows(tx: tx, lease: lease, nodeName: me.nodeName, signer: signing.current)
                var merge = BatchMerge<SQLiteRows>(wallMilliseconds: now)
                let outcome = try merge.reissue(pending, in: &rows)
                tx = rows.tx
                try tx.db.execute(sql: "DELETE FROM rejoin_pending")
                tx.writerMarker = (try merge.writer?.id ?? Transaction.currentWriter(db: tx.db), try tx.countChange())
                try tx.saveClock()
                return .commit(outcome)
            }
        }
    }

    /// This replica's own write identities: its node id and every writer it started.
    static func ownWriters(db: Database) throws -> [NodeID] {
        let node = try Transaction.nodeID(db: db)
        let started = try String.fetchAll(db, sql: "SELECT writer_id FROM writer").compactMap(NodeID.init(text:))
        return Array(Set([node] + started)).sorted()
    }
}

extension Transaction: RejoinReading {
    func historyDots(ofField row: Int64) throws -> [Dot?] {
        try Row.fetchAll(
            db,
            sql: "SELECT n.node_id, h.counter FROM history h JOIN node n ON n.id = h.node WHERE h.field = ?",
            arguments: [row]
        ).map { entry in
            NodeID(text: entry[0]).map { Dot(node: $0, counter: UInt64(clamping: entry[1] as Int64)) }
        }
    }

    func heldField(item: String, _ name: FieldName) throws -> (row: Int64, state: FieldState, deleted: Bool)? {
        guard
            let row = try Row.fetchOne(
                db,
                sql:
                    "SELECT f.id, f.state, i.deleted FROM field f JOIN item i ON \(FieldRows.of()) WHERE i.item_id = ? AND f.name = ?",
                arguments: [item, name.rawValue]
            )
        else { return nil }
        return (row[0], try StoredState.decode(Array(row[1] as Data), db: db, nodes: nodes), row[2])
    }
}

extension Transaction {
    /// Keeps a field state aside for re-issue after the snapshot (joined with one kept before,
    /// should a rejoin be interrupted and start again). True if the field was not kept yet.
    mutating func keepAside(item: String, name: String, _ state: FieldState) throws -> Bool {
        var merged = state
        let existing = try Data.fetchOne(
            db,
            sql: "SELECT state FROM rejoin_pending WHERE item_id = ? AND name = ?",
            arguments: [item, name]
        )
        if let existing { merged.merge(try StoredState.decode(Array(existing), db: db, nodes: nodes)) }
        var rows: [NodeID: Int64] = [:]
        for node in StoredState.nodes(of: merged) { rows[node] = try nodeRow(node) }
        try db.execute(
            sql: """
                INSERT INTO rejoin_pending(item_id, name, state) VALUES (?, ?, ?)
                ON CONFLICT(item_id, name) DO UPDATE SET state = excluded.state
                """,
            arguments: [item, name, Data(StoredState.encode(merged, rows: rows))]
        )
        return existing == nil
    }

    /// Empties the replica of its items (for a rejoin): every item, field, version and history
    /// row, the query index, the links between items and the search texts, the version vector, the streams under way, the stability ledger and
    /// the folded writers (a fold must stay covered by the vector).
    /// The feed's numbering goes on past what it gave, and its floor moves there.
    /// Returns the transaction's change stamp.
    func emptyReplica() throws -> UInt64 {
        let highest = try Self.latestSeq(db: db)
        // Link rows name items by row id, and ids start again once `item` is empty: a row left
        // behind would make a new item look linked.
        for table in ["query_index", "item_link", "item_search", "history", "version", "field", "item", "stream"] {
            try db.execute(sql: "DELETE FROM \(table)")
        }
        try db.execute(sql: "UPDATE node SET counter = 0")
        try db.execute(sql: "DELETE FROM meta WHERE key IN ('stability', 'folded')")
        try setMeta("change_floor", String(highest))
        try setMeta("feed_floor", String(highest))
        return try countChange()
    }
}
