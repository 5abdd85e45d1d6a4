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
}
