import Foundation
import GRDB
public import LansyncCore
import LansyncJSON

/// What one change to a field was, as the change feed tells it (Docs/API.md, "The change feed").
/// The raw values are what the replica file stores.
public enum ChangeKind: Int, Sendable, CaseIterable {
    /// An item came into being (its `_type` was first written), here or on a peer.
    case create = 0
    /// A local edit (the CLI, the API).
    case edit = 1
    /// A change merged from a peer.
    case merge = 2
    /// Concurrent writes left the field with more than one value.
    case conflict = 3
    /// The field's conflict was settled (a resolve, a later write, or the relay).
    case settle = 4
    /// The item was deleted (its `_deleted` became true).
    case delete = 5
    /// The item was restored.
    case restore = 6

    /// The word the feed shows.
    public var name: String {
        switch self {
        case .create: "create"
        case .edit: "edit"
        case .merge: "merge"
        case .conflict: "conflict"
        case .settle: "settle"
        case .delete: "delete"
        case .restore: "restore"
        }
    }
}

/// One entry of the change feed: a field of an item changed, in the transaction that committed
/// it. Every change the replica commits gets the next sequence number, strictly increasing and
/// never reused, in this file and in every file rebuilt or restored from it (a restored or
/// rebuilt replica's numbers jump past any the older file gave).
public struct ChangeEntry: Sendable, Equatable {
    public let seq: UInt64
    /// Wall-clock milliseconds of the commit.
    public let at: UInt64
    public let item: ItemID
    /// The item's type as the replica holds it now.
    public let type: String
    public let field: FieldName
    public let kind: ChangeKind
    /// The field's shown value after the change, as JSON text (nil for a field with no value).
    public let value: String?
}

/// Where local changes come from, for the feed's `edit` / `merge`.
enum ChangeOrigin {
    case local, peer
}

extension ChangeEntry {
    /// How many entries the feed keeps: older ones are dropped, and a reader that asks for them
    /// is told to start again (``ReplicaStore/changes(since:limit:type:item:field:)``).
    public static let retained: UInt64 = 100_000
}

extension Transaction {
    /// Appends the feed entry for a field this transaction saved (its row `fieldRow`).
    mutating func recordChange(fieldRow: Int64, name: FieldName, old: FieldState?, new: FieldState) throws {
        let kind: ChangeKind
        if name == .deleted {
            let was = old.map(Self.deletes) ?? false
            let now = Self.deletes(new)
            kind = was == now ? (origin == .local ? .edit : .merge) : now ? .delete : .restore
        } else if name == .type, old?.isEmpty ?? true {
            kind = .create
        } else if new.hasConflict, old?.hasConflict != true {
            kind = .conflict
        } else if old?.hasConflict == true, !new.hasConflict {
            kind = .settle
        } else {
            kind = origin == .local ? .edit : .merge
        }
        if commitTime == nil { commitTime = Int64(clamping: WallClock.milliseconds) }
        var value: Data?
        if let shown = new.shownValue {
            var writer = ByteWriter()
            writer.value(shown)
            value = Data(writer.bytes)
        }
        try db.cachedStatement(sql: "INSERT INTO change(at, field, kind, value) VALUES (?, ?, ?, ?)")
            .execute(arguments: [commitTime, fieldRow, kind.rawValue, value])
        // A transaction of many changes (an import, a first sync) keeps the feed to its size as
        // it goes, so the file never holds more than that.
        changesRecorded += 1
        if changesRecorded % 10_000 == 0 { try pruneChanges() }
    }

    static func deletes(_ state: FieldState) -> Bool {
        state.versions.contains { $0.write == .assign(.bool(true)) }
    }

    /// Keeps the feed to its last ``ChangeEntry/retained`` entries (every 256th transaction that
    /// changed something, and every 10,000 changes within one).
    func pruneChanges(stamp: UInt64) throws {
        guard stamp % 256 == 0 else { return }
        try pruneChanges()
    }

    func pruneChanges() throws {
        try db.execute(
            sql: "DELETE FROM change WHERE seq <= (SELECT seq FROM sqlite_sequence WHERE name = 'change') - ?",
            arguments: [Int64(ChangeEntry.retained)]
        )
    }

    /// Moves the feed's numbering past `floor` (a replica restored from an older copy, or
    /// rebuilt: numbers the older file gave must not come again).
    static func raiseChangeSequence(to floor: UInt64, db: Database) throws {
        let current = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'change'")
        guard Int64(clamping: floor) > current ?? 0 else { return }
        if current == nil {
            try db.execute(
                sql: "INSERT INTO sqlite_sequence(name, seq) VALUES ('change', ?)",
                arguments: [Int64(clamping: floor)]
            )
        } else {
            try db.execute(
                sql: "UPDATE sqlite_sequence SET seq = ? WHERE name = 'change'",
                arguments: [Int64(clamping: floor)]
            )
        }
    }

    /// A floor no restored or rebuilt file's numbering can have reached: a thousand numbers for
    /// every millisecond since 1970 (a replica would need a thousand changes a millisecond,
    /// for decades, to catch up).
    static var changeSequenceFloor: UInt64 { WallClock.milliseconds * 1000 }
}

extension ReplicaStore {
    /// The feed after `since` (entries with a greater sequence number), oldest first, at most
    /// `limit`; only those of items of `type`, of `item`, or of `field` if given. Throws
    /// ``FeedGap`` when entries after `since` were already dropped (the reader must start again
    /// from a full listing).
    public func changes(
        since: UInt64,
        limit: Int = 1000,
        type: String? = nil,
        item: ItemID? = nil,
        field: FieldName? = nil
    ) throws -> [ChangeEntry] {
        let (entries, oldest) = try read { db -> ([ChangeEntry], UInt64?) in
            var sql = """
                SELECT c.seq, c.at, i.item_id, i.type, f.name, c.kind, c.value FROM change c
                JOIN field f ON f.id = c.field JOIN item i ON i.id = f.item WHERE c.seq > ?
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
            sql += " ORDER BY c.seq LIMIT ?"
            arguments.append(limit)
            let entries = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).compactMap {
                row -> ChangeEntry? in
                guard let kind = ChangeKind(rawValue: row[5]) else { return nil }
                var value: Value?
                if let bytes = row[6] as Data? {
                    var reader = ByteReader(Array(bytes))
                    value = try? reader.value()
                }
                return ChangeEntry(
                    seq: UInt64(clamping: row[0] as Int64),
                    at: UInt64(clamping: row[1] as Int64),
                    item: ItemID(unchecked: row[2]),
                    type: row[3],
                    field: FieldName(unchecked: row[4]),
                    kind: kind,
                    value: value.map(\.jsonText)
                )
            }
            let oldest = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM change").map { UInt64(clamping: $0) }
            return (entries, oldest)
        }
        if let oldest, since + 1 < oldest { throw FeedGap(since: since, oldest: oldest) }
        return entries
    }

    /// The feed's latest sequence number (0 before any change): a reader that starts from it
    /// sees every later change.
    public func latestChangeSeq() throws -> UInt64 {
        try read { db in
            UInt64(clamping: try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'change'") ?? 0)
        }
    }
}

/// A reader asked for feed entries the replica no longer keeps.
public struct FeedGap: Error, Sendable, CustomStringConvertible {
    public let since: UInt64
    /// The oldest entry kept.
    public let oldest: UInt64
    public var description: String {
        "the change feed no longer holds the changes after \(since) (it keeps the last \(ChangeEntry.retained), from \(oldest)): list the items again, then follow the feed from its latest sequence number"
    }
}
