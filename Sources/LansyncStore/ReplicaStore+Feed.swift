import Foundation
import GRDB
public import LansyncCore
import LansyncJSON
public import LansyncReplica

/// One entry of the change feed: a field of an item changed. Every change a replica commits gets
/// the next sequence number, strictly increasing and never given twice, in this file and in every
/// file rebuilt or restored from it. The feed lists each field once, at its latest change: a
/// field changed twice since a reader last looked shows once, with its latest number and value.
public struct ChangeEntry: Sendable, Equatable {
    public let seq: UInt64
    /// Wall-clock milliseconds of the commit.
    public let at: UInt64
    public let item: ItemID
    /// The item's type as the replica holds it now.
    public let type: String
    public let field: FieldName
    public let kind: ChangeKind
    /// The field's shown value after the change (nil for a field with no value).
    public let value: Value?
    /// True if the field's shown version removed it (an unset): `value` is nil, and the item no
    /// longer shows the field.
    public var removed = false
}

extension Transaction {
    /// The feed's number, time and kind for a field this transaction saves.
    mutating func nextChange(
        name: FieldName,
        old: FieldState?,
        new: FieldState,
        conflict: Bool
    ) throws
        -> (seq: Int64, at: Int64, kind: ChangeKind)
    {
        let kind = ChangeKind.of(name, old: old, new: new, conflict: conflict, origin: origin)
        if lastSeq == nil {
            lastSeq = try Self.latestSeq(db: db)
            commitTime = Int64(clamping: WallClock.milliseconds)
        }
        lastSeq! += 1
        return (lastSeq!, commitTime!, kind)
    }

    /// The highest number the feed gave: the latest change's, the floor a restore or repair set,
    /// or the highest a collection or purge removed (without it, a purge of the field that held
    /// the latest number would let the next change take that number again, and a feed reader
    /// that had seen it would never see that change).
    static func latestSeq(db: Database) throws -> Int64 {
        let highest = try Int64.fetchOne(db.cachedStatement(sql: latestSeqSQL)) ?? 0
        return max(highest, try feedFloor(db: db))
    }

    /// The highest feed number a collection, purge or rejoin put out of use (meta `feed_floor`,
    /// `change_floor`).
    static func feedFloor(db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db,
            sql: "SELECT max(CAST(value AS INTEGER)) FROM meta WHERE key IN ('change_floor', 'feed_floor')"
        ) ?? 0
    }

    /// The last entry of the index `field_by_seq`, not a scan of every field (which, once per
    /// transaction, made a first sync seven times slower).
    static let latestSeqSQL = "SELECT max(seq) FROM field"

    /// The feed's query after `since`, a walk of `field_by_seq` from `since` on. One bound on
    /// `seq` only: given two (`seq > 0 AND seq > ?`, for a partial index), SQLite walked from the
    /// constant one, through every field, on each call (100 feed clients made a write take 0.35 s).
    static func changesQuery(
        since: UInt64,
        limit: Int,
        type: String?,
        item: ItemID?,
        field: FieldName?
    )
        -> (sql: String, arguments: StatementArguments)
    {
        var sql = """
            SELECT f.seq, f.changed_at, i.item_id, i.type, f.name, f.change_kind, f.state FROM field f
            JOIN item i ON i.id = f.item WHERE f.seq > ?
            """
        var arguments: [(any DatabaseValueConvertible)?] = [Int64(clamping: since)]
        if let type {
            sql += " AND i.type = ?"
            arguments.append(type)
        }
        if let item {
            sql += " AND i.item_id = ?"
            arguments.append(item.rawValue)
        }
        if let field {
            sql += " AND f.name = ?"
            arguments.append(field.rawValue)
        }
        sql += " ORDER BY f.seq LIMIT ?"
        arguments.append(limit)
        return (sql, StatementArguments(arguments))
    }

    /// Moves the feed's numbering past `floor` (a replica restored from an older copy, or
    /// rebuilt: numbers the older file gave must not come again).
    static func raiseChangeSequence(to floor: UInt64, db: Database) throws {
        guard Int64(clamping: floor) > (try latestSeq(db: db)) else { return }
        try setMeta("change_floor", String(floor), db: db)
    }

    static var changeSequenceFloor: UInt64 { ReplicaConstants.changeSequenceFloor }
}

extension ReplicaStore {
    /// The feed after `since` (entries with a greater sequence number), oldest first, at most
    /// `limit`; only those of items of `type`, of `item`, or of `field` if given.
    public func changes(
        since: UInt64,
        limit: Int = 1000,
        type: String? = nil,
        item: ItemID? = nil,
        field: FieldName? = nil
    ) throws -> [ChangeEntry] {
        try changePage(since: since, limit: limit, type: type, item: item, field: field).entries
    }

    /// A page of the feed and where the next one starts (`last`): the last entry's number when
    /// the page is full, else the feed's latest number, both read in one snapshot so that no
    /// change committed meanwhile is skipped.
    public func changePage(
        since: UInt64,
        limit: Int = 1000,
        type: String? = nil,
        item: ItemID? = nil,
        field: FieldName? = nil
    ) throws -> (entries: [ChangeEntry], last: UInt64) {
        try read { db -> ([ChangeEntry], UInt64) in
            if since > 0,
                let floor = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'feed_floor'")
                )
                .flatMap(UInt64.init), since < floor
            {
                throw StoreError.feedCollected(since: since, floor: floor)
            }
            let (sql, arguments) = Transaction.changesQuery(
                since: since,
                limit: limit,
                type: type,
                item: item,
                field: field
            )
            let entries = try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap {
                row -> ChangeEntry? in
                guard let kind = ChangeKind(rawValue: row[5]) else { return nil }
                let state = try? StoredState.decode(Array(row[6] as Data), db: db, nodes: nodeRows)
                return ChangeEntry(
                    seq: UInt64(clamping: row[0] as Int64),
                    at: UInt64(clamping: row[1] as Int64),
                    item: ItemID(unchecked: row[2]),
                    type: row[3],
                    field: FieldName(unchecked: row[4]),
                    kind: kind,
                    value: state?.shownValue,
                    removed: state?.shownVersion?.write == .unset
                )
            }
            let last =
                entries.count < limit
                ? max(since, UInt64(clamping: try Transaction.latestSeq(db: db))) : entries.last!.seq
            return (entries, last)
        }
    }

    /// The feed's latest sequence number (0 before any change): a reader that starts from it
    /// sees every later change.
    public func latestChangeSeq() throws -> UInt64 {
        try read { db in UInt64(clamping: try Transaction.latestSeq(db: db)) }
    }
}
