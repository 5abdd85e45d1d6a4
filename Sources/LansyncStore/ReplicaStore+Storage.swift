import Foundation
import GRDB
import LansyncCore
public import LansyncReplica

// The SQLite replica as the node sees it: most requirements are the members of the same name.
extension ReplicaStore: ReplicaStorage, BatchIntake {
    /// The file's and its write-ahead log's ``FileStamp``: a commit by any process moves it.
    public func quickChangeMark() -> [Int] { FileStamp(path: path).parts }

    /// None: commands on this machine nudge the node (``ReplicaStorage/commitsElsewhere()``).
    public func commitsElsewhere() -> AsyncStream<CommitElsewhere>? { nil }
}

extension ReplicaStore: DeltaReading {
    public func readDelta<T>(_ body: (any DeltaReads) throws -> T) throws(StoreError) -> T {
        try read { db in try body(SQLiteDeltaReads(db: db, store: self)) }
    }
}

/// A delta batch's reads in one of the SQLite store's read transactions.
struct SQLiteDeltaReads: DeltaReads {
    let db: Database
    let store: ReplicaStore

    func versionRows(node: NodeID, after counter: UInt64, limit: Int) throws -> [DeltaPlanner.IndexRow] {
        try store.versionRows(db, node: node, after: counter, limit: limit)
    }

    func superseded(
        after cursor: SupersededCursor,
        limit: Int
    ) throws -> (keys: [FieldKey], next: SupersededCursor, complete: Bool) {
        try store.superseded(db, after: cursor, limit: limit)
    }

    func sizedFieldUpdates(_ keys: [FieldKey]) throws -> (updates: [FieldUpdate], bytes: Int, broken: [FieldKey]) {
        try store.sizedFieldUpdates(db, keys)
    }

    func lacking(local: VersionVector, remote: VersionVector, cap: Int) throws -> Int {
        try ReplicaStore.lacking(db, local: local, remote: remote, cap: cap)
    }

    func signedRuns(
        of node: NodeID,
        overlapping counters: ClosedRange<UInt64>
    ) throws -> [(run: SignedRun, leaves: Int)] {
        guard let nodeRow = try ReplicaStore.nodeRow(of: node, db: db) else { return [] }
        // Runs of a writer never overlap: the one starting at or before the range's start, and
        // those starting inside it.
        return try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT first, last, key, signature, leaves FROM signed_run WHERE node = ?1 AND first <= ?3 AND last >= ?2
                    AND first >= (SELECT coalesce(max(first), 0) FROM signed_run WHERE node = ?1 AND first <= ?2)
                    ORDER BY first
                    """
            ),
            arguments: [nodeRow, Int64(clamping: counters.lowerBound), Int64(clamping: counters.upperBound)]
        ).map { row in
            (
                SignedRun(
                    writer: node,
                    first: UInt64(clamping: row[0] as Int64),
                    last: UInt64(clamping: row[1] as Int64),
                    key: Array(row[2] as Data),
                    signature: Array(row[3] as Data)
                ),
                row[4] as Int
            )
        }
    }

    func goneLeaves(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [RunLeaf] {
        guard let nodeRow = try ReplicaStore.nodeRow(of: node, db: db) else { return [] }
        return try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT counter, field, digest FROM run_leaf WHERE node = ? AND counter BETWEEN ? AND ? ORDER BY counter"
            ),
            arguments: [nodeRow, Int64(clamping: counters.lowerBound), Int64(clamping: counters.upperBound)]
        ).compactMap { row in
            // A damaged digest is no leaf: the run's proof then cannot be made, and is not sent.
            RunLeaf(
                counter: UInt64(clamping: row[0] as Int64),
                field: FieldName(unchecked: row[1]),
                digestBytes: row[2] as Data
            )
        }
    }

    func memberCertificate(of key: [UInt8]) throws -> [UInt8]? {
        try Data.fetchOne(
            db.cachedStatement(sql: "SELECT der FROM member_certificate WHERE key = ?"),
            arguments: [Data(key)]
        ).map { Array($0) }
    }

    func indexedVersions(of node: NodeID, in counters: ClosedRange<UInt64>) throws -> [DeltaPlanner.IndexRow] {
        guard let nodeRow = try ReplicaStore.nodeRow(of: node, db: db) else { return [] }
        return try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT v.counter, i.item_id, f.name FROM version v
                    JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
                    WHERE v.node = ? AND v.counter BETWEEN ? AND ? ORDER BY v.counter
                    """
            ),
            arguments: [nodeRow, Int64(clamping: counters.lowerBound), Int64(clamping: counters.upperBound)]
        ).map { row in
            (
                UInt64(clamping: row[0] as Int64),
                FieldKey(item: ItemID(unchecked: row[1]), field: FieldName(unchecked: row[2]))
            )
        }
    }
}
