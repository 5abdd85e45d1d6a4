import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Causal stability, the members' reports and the collection of deleted items (Docs/MERGE.md,
// "Causal stability and collection"; Docs/STORAGE.md, "Collection").
extension ReplicaStore {

    /// Joins `reports` into table `member`: vectors joined, the later time kept. This replica's
    /// own node is never recorded (its report is its own vector).
    ///
    /// `gossiped`: reports a peer passed on about others, which no signature vouches for. They are
    /// bounded before they are kept: only of nodes this replica already knows (a writer it holds,
    /// a peer, a member), with only the writers it holds, so a member making up nodes or writers
    /// cannot grow the table; and they never bring back a forgotten member (only the member's
    /// own session does, with a report newer than its forgetting).
    public func recordReports(_ reports: [MemberReport], gossiped: Bool = false) throws(StoreError) {
        guard !reports.isEmpty else { return }
        let own = try info().nodeID
        try guarded {
            try database.write { db in try Self.recordReports(reports, gossiped: gossiped, own: own, db: db) }
        }
    }

    static func recordReports(_ reports: [MemberReport], gossiped: Bool, own: NodeID, db: Database) throws {
        let known: Set<String>? =
            gossiped
            ? Set(
                try String.fetchAll(
                    db,
                    sql: "SELECT node_id FROM node UNION SELECT node_id FROM peer UNION SELECT node_id FROM member"
                )
            ) : nil
        for report in reports.prefix(ReplicaConstants.maxGossipedReports) where report.nodeID != own {
            let held = try Row.fetchOne(
                db,
                sql: "SELECT seen, seen_at, forgotten_at, signed_at FROM member WHERE node_id = ?",
                arguments: [report.nodeID.text]
            ).map { row in
                var r = ByteReader(Array(row[0] as Data))
                return MemberReport(
                    nodeID: report.nodeID,
                    seen: (try? r.versionVector()) ?? VersionVector(),
                    at: UInt64(clamping: row[1] as Int64),
                    forgottenAt: (row[2] as Int64?).map { UInt64(clamping: $0) },
                    signedAt: (row[3] as Int64?).map { UInt64(clamping: $0) } ?? 0
                )
            }
            if let kept = report.recorded(over: held, gossiped: gossiped, known: known) {
                var w = ByteWriter()
                w.versionVector(kept.seen)
                try db.execute(
                    sql: """
                        INSERT INTO member(node_id, seen, seen_at, forgotten_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT(node_id) DO UPDATE SET seen = excluded.seen, seen_at = excluded.seen_at,
                            forgotten_at = excluded.forgotten_at
                        """,
                    arguments: [
                        report.nodeID.text, Data(w.bytes), Int64(clamping: kept.at),
                        kept.forgottenAt.map { Int64(clamping: $0) },
                    ]
                )
            }
            // The member's own signed report, to pass on: a later one replaces it (a row exists
            // by now for any member the replica keeps a report of).
            if let signed = report.signed, report.signedAt > held?.signedAt ?? 0 {
                try db.execute(
                    sql: "UPDATE member SET signed = ?, signed_at = ? WHERE node_id = ?",
                    arguments: [Data(signed), Int64(clamping: report.signedAt), report.nodeID.text]
                )
            }
        }
    }

    /// Every member's report this replica holds (forgotten ones included), newest first.
    public func memberReports() throws(StoreError) -> [MemberReport] {
        try read { db in try Self.memberReports(db: db) }
    }

    static func memberReports(db: Database) throws -> [MemberReport] {
        try Row.fetchAll(
            db,
            sql: "SELECT node_id, seen, seen_at, forgotten_at, signed, signed_at FROM member ORDER BY seen_at DESC"
        )
        .compactMap { row in
            guard let id = NodeID(text: row[0]) else { return nil }
            var r = ByteReader(Array(row[1] as Data))
            return MemberReport(
                nodeID: id,
                seen: (try? r.versionVector()) ?? VersionVector(),
                at: UInt64(clamping: row[2] as Int64),
                forgottenAt: (row[3] as Int64?).map { UInt64(clamping: $0) },
                signed: (row[4] as Data?).map { Array($0) },
                signedAt: (row[5] as Int64?).map { UInt64(clamping: $0) } ?? 0
            )
        }
    }

    /// Marks `node` gone for good (`lansync members forget`, a revocation): it no longer holds
    /// the frontier back nor counts for SYNCED, and only a session of its own brings it back.
    /// `dropPeer`: forget what this node recorded of it as a peer too (a revoked peer's record
    /// keeps showing why it is refused).
    public func forgetMember(_ node: NodeID, at now: UInt64, dropPeer: Bool = true) throws(StoreError) {
        var w = ByteWriter()
        w.versionVector(VersionVector())
        try guarded {
            try database.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO member(node_id, seen, seen_at, forgotten_at) VALUES (?, ?, 0, ?)
                        ON CONFLICT(node_id) DO UPDATE SET forgotten_at = excluded.forgotten_at
                        """,
                    arguments: [node.text, Data(w.bytes), Int64(clamping: now)]
                )
                if dropPeer { try db.execute(sql: "DELETE FROM peer WHERE node_id = ?", arguments: [node.text]) }
            }
        }
    }

    // MARK: Settings

    public func collectionSettings() throws(StoreError) -> CollectionSettings {
        try read { db in try Self.collectionSettings(db: db) }
    }

    static func collectionSettings(db: Database) throws -> CollectionSettings {
        func value(_ key: String) throws -> UInt64? {
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]).flatMap {
                UInt64($0)
            }
        }
        let standard = CollectionSettings.standard
        return CollectionSettings(
            trashWindow: try value("trash_window") ?? standard.trashWindow,
            awayAfter: try value("away_after") ?? standard.awayAfter
        )
    }

    public func setCollectionSettings(_ settings: CollectionSettings) throws(StoreError) {
        try guarded {
            try database.write { db in
                for (key, value) in [("trash_window", settings.trashWindow), ("away_after", settings.awayAfter)] {
                    try Transaction.setMeta(key, String(value), db: db)
                }
            }
        }
    }

    // MARK: The frontier

    /// The stability ledger as last saved (meta `stability`).
    public func stabilityLedger() throws(StoreError) -> StabilityLedger {
        try read { db in try Self.ledger(db: db) }
    }

    static func ledger(db: Database) throws -> StabilityLedger {
        guard let bytes = try Transaction.metaBytes("stability", db: db) else { return StabilityLedger() }
        return StabilityLedgerCoding.decode(bytes) ?? StabilityLedger()
    }

    // MARK: Collection

    /// One collection round (``CollectionRoundSteps/collectionRound(now:)``): the active members'
    /// reports into the stability ledger, every collectable deleted item reduced to its minimal
    /// tombstone, a few hundred items per transaction, old tombstones purged, and the freed
    /// pages handed back to the file system.
    @discardableResult
    public func collect(now: UInt64) throws(StoreError) -> CollectionRound {
        try collectionRound(now: now)
    }

    /// Whether this replica judges no member away in collection: it is away itself, or stale (a
    /// copy put back, ``staleSince(now:)``). Either is the one out of date: what it collected
    /// without the others, they would not hold once it rejoins from one of them (issue 63: a
    /// relay put back from a copy purged its own delete, judging every member away, then
    /// rejoined from a member that held the item live).
    static func judgesNoOneAway(db: Database, now: UInt64, settings: CollectionSettings) throws -> Bool {
        try awaySince(db: db, now: now, settings: settings) != nil
            || staleSince(db: db, now: now, settings: settings) != nil
    }

    /// Hands the file's free pages back to the file system (an incremental vacuum; a file made
    /// before incremental vacuum was on is converted first, by one VACUUM). Returns how many.
    @discardableResult
    public func returnFreePages() throws(StoreError) -> Int {
        try guarded {
            try database.writeWithoutTransaction { db in
                let free = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                guard free > 0 else { return 0 }
                if try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") != 2 {
                    try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                    try db.execute(sql: "VACUUM")
                } else {
                    try db.execute(sql: "PRAGMA incremental_vacuum")
                }
                return free
            }
        }
    }
}

extension Transaction {
    /// Reduces a deleted item to its minimal tombstone (in a write without foreign-key checks:
    /// the rows that point to a field row, in `version` and `history`, go first): its fields
    /// other than the tombstone and `_type` leave the field table,
    /// the version index, history and the query index; what the change feed numbered them is
    /// remembered as its floor (a reader behind it must start again from a snapshot).
    mutating func collect(_ item: LoadedItem, at now: UInt64) throws {
        guard let row = item.row else { return }
        let kept = ItemState.keptByCollection
        let gone = item.fieldRows.filter { !kept.contains($0.key) }.map(\.value)
        if !gone.isEmpty {
            let list = gone.map(String.init).joined(separator: ",")
            let highest = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM field WHERE id IN (\(list))") ?? 0
            // By the index's own key, from the states' live versions (what the index holds): a
            // DELETE by field alone would scan the whole index for every item.
            for (name, fieldRow) in item.fieldRows where !kept.contains(name) {
                for version in item.state.fields[name]?.versions ?? [] {
                    let node = try nodeRow(version.dot.node)
                    try db.cachedStatement(sql: "DELETE FROM version WHERE node = ? AND counter = ? AND field = ?")
                        .execute(arguments: [node, Int64(clamping: version.dot.counter), fieldRow])
                }
                // The runs that wrote them stay provable for their other versions.
                try keepCollected(item.state.fields[name], item: item.state.id, field: name)
            }
            try db.execute(sql: "DELETE FROM history WHERE field IN (\(list))")
            try db.execute(sql: "DELETE FROM field WHERE id IN (\(list))")
            try db.execute(
                sql: """
                    INSERT INTO meta(key, value) VALUES ('feed_floor', ?)
                    ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))
                    """,
                arguments: [String(highest)]
            )
        }
        if let tombstone = item.fieldRows[.deleted] {
            try db.execute(sql: "DELETE FROM history WHERE field = ?", arguments: [tombstone])
        }
        try db.execute(sql: "DELETE FROM query_index WHERE item = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM item_link WHERE item = ?", arguments: [row])
        noteSearchChange(item: row)
        // The `_type` stays, with its history (a rejoin reads both): the item keeps its type,
        // and a conflict on it (concurrent creates of two types) stays counted.
        try db.execute(
            sql: "UPDATE item SET collected = ?, conflicts = ? WHERE id = ?",
            arguments: [
                Int64(clamping: max(1, now)), item.state.minimalTombstone.conflictCount, row,
            ]
        )
    }

    /// Forgets a minimal tombstone (in a write without foreign-key checks): its versions, its
    /// field row and the item's row go; the change feed's floor moves past what it numbered.
    mutating func purge(_ item: LoadedItem) throws {
        guard let row = item.row else { return }
        for (name, fieldRow) in item.fieldRows {
            for version in item.state.fields[name]?.versions ?? [] {
                let node = try nodeRow(version.dot.node)
                try db.cachedStatement(sql: "DELETE FROM version WHERE node = ? AND counter = ? AND field = ?")
                    .execute(arguments: [node, Int64(clamping: version.dot.counter), fieldRow])
            }
            try keepCollected(item.state.fields[name], item: item.state.id, field: name)
            try db.cachedStatement(sql: "DELETE FROM history WHERE field = ?").execute(arguments: [fieldRow])
        }
        let highest =
            try Int64.fetchOne(
                db,
                sql: "SELECT max(seq) FROM field WHERE id BETWEEN ? AND ?",
                arguments: FieldRows.arguments(item: row)
            ) ?? 0
        try db.execute(
            sql: """
                INSERT INTO meta(key, value) VALUES ('feed_floor', ?)
                ON CONFLICT(key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))
                """,
            arguments: [String(highest)]
        )
        try db.execute(sql: "DELETE FROM field WHERE id BETWEEN ? AND ?", arguments: FieldRows.arguments(item: row))
        try db.execute(sql: "DELETE FROM query_index WHERE item = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM item_link WHERE item = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM item WHERE id = ?", arguments: [row])
        noteSearchChange(item: row)
    }
}

extension ReplicaStore {
    /// How much of the replica is the past, and what holds its collection back. Counted through
    /// indexes where it can be (the deleted items not collected yet have one of their own), so
    /// that `status` stays cheap on a large replica.
    public func collectionFigures(now: UInt64) throws(StoreError) -> CollectionFigures {
        try read { db in
            var figures = CollectionFigures()
            func count(_ sql: String) throws -> Int { try Int.fetchOne(db, sql: sql) ?? 0 }
            figures.collectableItems = try count("SELECT count(*) FROM item WHERE deleted = 1 AND collected = 0")
            figures.collectableFields = try count(
                "SELECT count(*) FROM item i JOIN field f ON \(FieldRows.of()) WHERE i.deleted = 1 AND i.collected = 0"
            )
            let deleted = try count("SELECT count(*) FROM item WHERE deleted = 1")
            figures.collectedItems = deleted - figures.collectableItems
            figures.purgedItems =
                try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'purged_items'").flatMap { Int($0) }
                ?? 0
            // A collected item keeps its tombstone and its `_type` (one collected by an earlier
            // release, or received from a replica of one, only its tombstone).
            figures.liveFields =
                try count("SELECT count(*) FROM field") - figures.collectableFields
                - count("SELECT count(*) FROM item i JOIN field f ON \(FieldRows.of()) WHERE i.collected <> 0")
            let pageSize = try count("PRAGMA page_size")
            figures.fileBytes = try count("PRAGMA page_count") * pageSize
            figures.freeBytes = try count("PRAGMA freelist_count") * pageSize
            let ledger = try Self.ledger(db: db)
            figures.frontierAt = ledger.stableAt > 0 ? ledger.stableAt : nil
            (figures.heldBackBy, figures.departed) = try Self.laggard(db: db, now: now)
            let rejoined = try Self.rejoinedAt(db: db)
            figures.rejoinedAt = rejoined > 0 ? rejoined : nil
            let settings = try Self.collectionSettings(db: db)
            figures.staleSince = try Self.staleSince(db: db, now: now, settings: settings)
            figures.awaySince = try Self.awaySince(db: db, now: now, settings: settings) ?? figures.staleSince
            return figures
        }
    }

    /// The active member that holds the frontier back (nil if none), and the departed ones.
    public func frontierLaggard(now: UInt64) throws(StoreError) -> NodeID? {
        try read { db in try Self.laggard(db: db, now: now).heldBackBy }
    }

    static func laggard(db: Database, now: UInt64) throws -> (heldBackBy: NodeID?, departed: [NodeID]) {
        let settings = try Self.collectionSettings(db: db)
        return MemberReport.laggard(
            try Self.memberReports(db: db),
            now: now,
            settings: settings,
            selfAway: try Self.judgesNoOneAway(db: db, now: now, settings: settings),
            own: try Transaction.nodeID(db: db),
            vector: try Self.versionVector(db: db)
        )
    }

    /// The members that no longer count for SYNCED: forgotten, or away (silent past the away
    /// window; they hold the frontier back for the clock margin more, ``CollectionSettings/holdsBackFor``).
    public func departedMembers(now: UInt64) throws(StoreError) -> Set<NodeID> {
        try read { db in
            let settings = try Self.collectionSettings(db: db)
            let reports = try Self.memberReports(db: db)
            let active = Set(MemberReport.active(reports, now: now, awayAfter: settings.awayAfter).map(\.nodeID))
            return Set(reports.map(\.nodeID)).subtracting(active)
        }
    }
}
