import Foundation
public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Causal stability, the members' reports and the collection of deleted items, as the SQLite
// store keeps them (Docs/MERGE.md, "Causal stability and collection"), by the same rules
// (CollectionRules.swift): table `member`, the stability ledger in meta `stability`.
extension PostgresReplica {
    /// Joins `reports` into table `member` (``LansyncStore/MemberReport/recorded(over:gossiped:known:)``):
    /// gossip only of nodes the replica knows, with only the writers it knows, at most
    /// ``LansyncStore/ReplicaStore/maxGossipedReports``; never the replica's own node.
    public func recordReports(_ reports: [MemberReport], gossiped: Bool) throws(StoreError) {
        guard !reports.isEmpty else { return }
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .peer)
                try Self.recordReports(reports, gossiped: gossiped, db)
            }
        }
    }

    static func recordReports(_ reports: [MemberReport], gossiped: Bool, _ db: BlockingPostgres.Statements) throws {
        let own = try db.value("SELECT value FROM meta WHERE key = 'node_id'", as: String.self)
        let known: Set<String>? =
            gossiped
            ? Set(
                try db.run("SELECT node_id FROM node UNION SELECT node_id FROM peer UNION SELECT node_id FROM member")
                    .map { try $0.decode(String.self) }
            ) : nil
        for report in reports.prefix(ReplicaConstants.maxGossipedReports) where report.nodeID.text != own {
            let held = try memberReports(db, node: report.nodeID).first
            if let kept = report.recorded(over: held, gossiped: gossiped, known: known) {
                var writer = ByteWriter()
                writer.versionVector(kept.seen)
                try db.run(
                    """
                    INSERT INTO member (node_id, seen, seen_at, forgotten_at)
                    VALUES (\(kept.nodeID.text), \(ByteBuffer(bytes: writer.bytes)), \(bigint: kept.at),
                        \(kept.forgottenAt.map { Int64(clamping: $0) }))
                    ON CONFLICT (node_id) DO UPDATE SET seen = excluded.seen, seen_at = excluded.seen_at,
                        forgotten_at = excluded.forgotten_at
                    """
                )
            }
            // The member's own signed report, to pass on, as the SQLite store keeps it.
            if let signed = report.signed, report.signedAt > held?.signedAt ?? 0 {
                try db.run(
                    """
                    UPDATE member SET signed = \(ByteBuffer(bytes: signed)), signed_at = \(bigint: report.signedAt)
                    WHERE node_id = \(report.nodeID.text)
                    """
                )
            }
        }
    }

    /// Every member's report the replica holds (forgotten ones included), newest first.
    public func memberReports() throws(StoreError) -> [MemberReport] {
        try guarded { try database.statements { db in try Self.memberReports(db) } }
    }

    static func memberReports(_ db: BlockingPostgres.Statements, node: NodeID? = nil) throws -> [MemberReport] {
        try db.run(
            """
            SELECT node_id, seen, seen_at, forgotten_at, signed, signed_at FROM member
            WHERE \(node?.text)::text IS NULL OR node_id = \(node?.text) ORDER BY seen_at DESC, node_id
            """
        ).compactMap { row in
            let (text, seen, at, forgotten, signed, signedAt) = try row.decode(
                (String, ByteBuffer, Int64, Int64?, ByteBuffer?, Int64?).self
            )
            guard let id = NodeID(text: text) else { return nil }
            var reader = ByteReader(Array(seen.readableBytesView))
            return MemberReport(
                nodeID: id,
                seen: (try? reader.versionVector()) ?? VersionVector(),
                at: UInt64(clamping: at),
                forgottenAt: forgotten.map { UInt64(clamping: $0) },
                signed: signed.map { Array($0.readableBytesView) },
                signedAt: signedAt.map { UInt64(clamping: $0) } ?? 0
            )
        }
    }

    /// Marks `node` gone for good: it no longer holds the frontier back, and only a session of
    /// its own brings it back. `dropPeer`: its peer record goes too.
    public func forgetMember(_ node: NodeID, at now: UInt64, dropPeer: Bool) throws(StoreError) {
        var writer = ByteWriter()
        writer.versionVector(VersionVector())
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .local)
                try db.run(
                    """
                    INSERT INTO member (node_id, seen, seen_at, forgotten_at)
                    VALUES (\(node.text), \(ByteBuffer(bytes: writer.bytes)), 0, \(bigint: now))
                    ON CONFLICT (node_id) DO UPDATE SET forgotten_at = excluded.forgotten_at
                    """
                )
                if dropPeer { try db.run("DELETE FROM peer WHERE node_id = \(node.text)") }
            }
        }
    }

    /// The stability ledger as last saved.
    public func stabilityLedger() throws(StoreError) -> StabilityLedger {
        try guarded { try database.statements { db in try Self.ledger(db) } }
    }

    static func ledger(_ db: BlockingPostgres.Statements) throws -> StabilityLedger {
        guard let text = try db.value("SELECT value FROM meta WHERE key = 'stability'", as: String.self),
            let bytes = Data(base64Encoded: text)
        else { return StabilityLedger() }
        return StabilityLedgerCoding.decode(Array(bytes)) ?? StabilityLedger()
    }

    /// One collection round, as the SQLite store's (``CollectionRoundSteps/collectionRound(now:)``):
    /// the active members' reports into the stability ledger, then every collectable deleted item
    /// reduced to its minimal tombstone, 200 items per transaction, then the tombstones collected
    /// longer ago than the away window purged. PostgreSQL's vacuum hands space back: no pages are
    /// counted as freed.
    @discardableResult
    public func collect(now: UInt64) throws(StoreError) -> CollectionRound {
        try collectionRound(now: now)
    }

    /// How much of the replica is the past, and what holds its collection back. The replica's
    /// size is its tables' and indexes' on the server; free space inside them is vacuum's to
    /// reuse and is not counted.
    public func collectionFigures(now: UInt64) throws(StoreError) -> CollectionFigures {
        try guarded {
            try database.transaction(snapshot: true) { db in
                var figures = CollectionFigures()
                func count(_ query: PostgresQuery) throws -> Int { try db.value(query, as: Int.self) ?? 0 }
                figures.collectableItems = try count("SELECT count(*) FROM item WHERE deleted AND collected = 0")
                figures.collectableFields = try count(
                    "SELECT count(*) FROM item i JOIN field f ON f.item = i.id WHERE i.deleted AND i.collected = 0"
                )
                figures.collectedItems =
                    try count("SELECT count(*) FROM item WHERE deleted") - figures.collectableItems
                figures.purgedItems =
                    try db.value("SELECT value FROM meta WHERE key = 'purged_items'", as: String.self)
                    .flatMap { Int($0) } ?? 0
                figures.liveFields =
                    try count("SELECT count(*) FROM field") - figures.collectableFields
                    - count("SELECT count(*) FROM item i JOIN field f ON f.item = i.id WHERE i.collected <> 0")
                figures.fileBytes = try count(
                    """
                    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                    JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = current_schema() AND c.relkind = 'r'
                    """
                )
                let ledger = try Self.ledger(db)
                figures.frontierAt = ledger.stableAt > 0 ? ledger.stableAt : nil
                (figures.heldBackBy, figures.departed) = try Self.laggard(db, now: now)
                let rejoined = try Self.rejoinedAt(db)
                figures.rejoinedAt = rejoined > 0 ? rejoined : nil
                let settings = try Self.collectionSettings(db)
                figures.staleSince = try Self.staleSince(db, now: now, settings: settings)
                figures.awaySince = try Self.awaySince(db, now: now, settings: settings) ?? figures.staleSince
                return figures
            }
        }
    }

    /// The active member that holds the frontier back (nil if none).
    public func frontierLaggard(now: UInt64) throws(StoreError) -> NodeID? {
        try guarded { try database.transaction(snapshot: true) { db in try Self.laggard(db, now: now).heldBackBy } }
    }

    static func laggard(
        _ db: BlockingPostgres.Statements,
        now: UInt64
    ) throws -> (heldBackBy: NodeID?, departed: [NodeID]) {
        let settings = try collectionSettings(db)
        guard
            let own = try db.value("SELECT value FROM meta WHERE key = 'node_id'", as: String.self).flatMap(
                NodeID.init(text:)
            )
        else { throw damaged("the node id in table meta is missing") }
        return MemberReport.laggard(
            try memberReports(db),
            now: now,
            settings: settings,
            selfAway: try judgesNoOneAway(db, now: now, settings: settings),
            own: own,
            vector: try versionVector(db)
        )
    }

    /// The members that no longer count for SYNCED: forgotten, or silent past the away window.
    public func departedMembers(now: UInt64) throws(StoreError) -> Set<NodeID> {
        try guarded {
            try database.transaction(snapshot: true) { db in
                let settings = try Self.collectionSettings(db)
                let reports = try Self.memberReports(db)
                let active = Set(MemberReport.active(reports, now: now, awayAfter: settings.awayAfter).map(\.nodeID))
                return Set(reports.map(\.nodeID)).subtracting(active)
            }
        }
    }

    /// Since when this replica is away itself (``LansyncStore/ReplicaStore/awaySince(now:)``).
    public func awaySince(now: UInt64) throws(StoreError) -> UInt64? {
        try guarded {
            try database.transaction(snapshot: true) { db in
                try Self.awaySince(db, now: now, settings: try Self.collectionSettings(db))
            }
        }
    }

    static func awaySince(
        _ db: BlockingPostgres.Statements,
        now: UInt64,
        settings: CollectionSettings
    ) throws -> UInt64? {
        let heard: Int64
        if let relay = try db.value("SELECT value FROM meta WHERE key = 'relay_id'", as: String.self) {
            guard relay != (try db.value("SELECT value FROM meta WHERE key = 'node_id'", as: String.self)) else {
                return nil
            }
            heard = try db.value("SELECT seen_at FROM member WHERE node_id = \(relay)", as: Int64.self) ?? 0
        } else {
            heard = try db.value("SELECT max(last_sync) FROM peer", as: Int64?.self).flatMap { $0 } ?? 0
        }
        return settings.awaySince(
            heard: max(UInt64(clamping: heard), try acceptedAt(db)),
            rejoinedAt: try rejoinedAt(db),
            now: now
        )
    }

    /// As on SQLite: when an operator last said this copy is current (meta `accepted_at`, 0 if
    /// never; ``LansyncStore/ReplicaStore/acceptAsCurrent(now:)``).
    static func acceptedAt(_ db: BlockingPostgres.Statements) throws -> UInt64 {
        try db.value("SELECT value FROM meta WHERE key = 'accepted_at'", as: String.self).flatMap(UInt64.init) ?? 0
    }

    /// Whether this replica judges no member away in collection: away itself, or stale
    /// (``LansyncStore/ReplicaStore`` has the same rule, and why).
    static func judgesNoOneAway(
        _ db: BlockingPostgres.Statements,
        now: UInt64,
        settings: CollectionSettings
    ) throws -> Bool {
        try awaySince(db, now: now, settings: settings) != nil || staleSince(db, now: now, settings: settings) != nil
    }

    /// Since when this replica's own state is older than the away window
    /// (``LansyncStore/ReplicaStore/staleSince(now:)``).
    public func staleSince(now: UInt64) throws(StoreError) -> UInt64? {
        try guarded {
            try database.transaction(snapshot: true) { db in
                try Self.staleSince(db, now: now, settings: try Self.collectionSettings(db))
            }
        }
    }

    static func staleSince(
        _ db: BlockingPostgres.Statements,
        now: UInt64,
        settings: CollectionSettings
    ) throws -> UInt64? {
        let synced = try db.value("SELECT max(last_sync) FROM peer", as: Int64?.self).flatMap { $0 } ?? 0
        let accepted = try acceptedAt(db)
        let restarted = try db.value(
            "SELECT max(started) FROM writer WHERE reason <> \(WriterRecord.Reason.rejoin.rawValue)",
            as: Int64?.self
        ).flatMap { $0 }
        return settings.staleSince(
            synced: max(UInt64(clamping: synced), accepted),
            rejoinedAt: try rejoinedAt(db),
            restarted: restarted.map { UInt64(clamping: $0) },
            now: now
        )
    }

    /// When `node` was last heard of (or forgotten), if it is away or forgotten here.
    public func memberAwaySince(_ node: NodeID, now: UInt64) throws(StoreError) -> UInt64? {
        try guarded {
            try database.transaction(snapshot: true) { db in
                try Self.memberReports(db, node: node).first?.awaySince(
                    now: now,
                    settings: try Self.collectionSettings(db)
                )
            }
        }
    }
}

extension PostgresWrite {
    /// Reduces a deleted item to its minimal tombstone: its fields other than the tombstone and
    /// `_type` leave the field table, the version index and history (the tombstone's history
    /// too); what the feed numbered them becomes its floor.
    mutating func collect(_ item: LoadedItem, at now: UInt64) throws {
        guard let row = item.row else { return }
        let kept = ItemState.keptByCollection
        let gone = item.fieldRows.filter { !kept.contains($0.key) }
        if !gone.isEmpty {
            let rows = Array(gone.values)
            let highest = try db.value(
                "SELECT coalesce(max(seq), 0) FROM field WHERE id = ANY(\(rows))",
                as: Int64.self
            )
            for (name, fieldRow) in gone {
                try unindex(item.state.fields[name], field: fieldRow)
                // The runs that wrote them stay provable for their other versions.
                try keepCollected(item.state.fields[name], item: item.state.id, field: name)
            }
            try db.run("DELETE FROM history WHERE field = ANY(\(rows))")
            try db.run("DELETE FROM field WHERE id = ANY(\(rows))")
            try raiseFeedFloor(to: highest ?? 0)
        }
        if let tombstone = item.fieldRows[.deleted] { try db.run("DELETE FROM history WHERE field = \(tombstone)") }
        // The `_type` stays, with its history (a rejoin reads both): the item keeps its type,
        // and a conflict on it stays counted.
        try db.run(
            """
            UPDATE item SET collected = \(bigint: max(1, now)), conflicts = \(item.state.minimalTombstone.conflictCount)
            WHERE id = \(row)
            """
        )
    }

    /// Forgets a minimal tombstone: its versions, fields, history and row go; the feed's floor
    /// moves past what it numbered.
    mutating func purge(_ item: LoadedItem) throws {
        guard let row = item.row else { return }
        for (name, fieldRow) in item.fieldRows {
            try unindex(item.state.fields[name], field: fieldRow)
            try keepCollected(item.state.fields[name], item: item.state.id, field: name)
        }
        let rows = Array(item.fieldRows.values)
        let highest = try db.value("SELECT coalesce(max(seq), 0) FROM field WHERE item = \(row)", as: Int64.self)
        try db.run("DELETE FROM history WHERE field = ANY(\(rows))")
        try raiseFeedFloor(to: highest ?? 0)
        try db.run("DELETE FROM field WHERE item = \(row)")
        try db.run("DELETE FROM item WHERE id = \(row)")
    }

    /// Removes a field's live versions from the version index, by the index's own key.
    private mutating func unindex(_ state: FieldState?, field: Int64) throws {
        for version in state?.versions ?? [] {
            let node = try nodeRow(version.dot.node)
            try db.run(
                "DELETE FROM version WHERE node = \(node) AND counter = \(bigint: version.dot.counter) AND field = \(field)"
            )
        }
    }

    private func raiseFeedFloor(to highest: Int64) throws {
        try db.run(
            """
            INSERT INTO meta (key, value) VALUES ('feed_floor', \(String(highest)))
            ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value::bigint, excluded.value::bigint)::text
            """
        )
    }
}
