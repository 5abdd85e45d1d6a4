import Foundation
import GRDB
import LansyncCore
import LansyncReplica

/// The rows of a SQLite replica that a batch merge (``BatchMerge``) and local edits
/// (``LocalEdits``) read and write, in a ``Transaction``: each step one or two prepared statements.
struct SQLiteRows: MergeRows, EditRows {
    var tx: Transaction
    /// For a writer claimed to overrule: the lease that proves the current one is this
    /// replica's to use, and the replica's name for a new one.
    let lease: WriterLease
    let nodeName: String
    let signer: (any WriteSigner)?

    var clock: HybridLogicalClock {
        get { tx.clock }
        set { tx.clock = newValue }
    }

    mutating func findItem(_ id: ItemID) throws -> (row: Int64, collected: Bool)? { try tx.itemRowAndCollection(id) }

    mutating func insertItem(_ id: ItemID) throws -> Int64 { try tx.insertItem(id) }

    func markUncollected(item row: Int64) throws {
        try tx.db.execute(sql: "UPDATE item SET collected = 0 WHERE id = ?", arguments: [row])
    }

    mutating func loadField(item: Int64, name: FieldName) throws -> (row: Int64, state: FieldState)? {
        try tx.loadField(item: item, name: name)
    }

    func userFieldCount(item: Int64) throws -> Int { try Transaction.userFieldCount(db: tx.db, item: item) }

    mutating func saveField(_ save: FieldSave) throws -> Int64 { try tx.saveField(save) }

    mutating func keep(_ run: SignedRun, leaves: Int) throws {
        let node = try tx.nodeRow(run.writer)
        try tx.db.cachedStatement(
            sql:
                "INSERT OR REPLACE INTO signed_run (node, first, last, leaves, key, signature) VALUES (?, ?, ?, ?, ?, ?)"
        ).execute(arguments: [node, Int64(run.first), Int64(run.last), leaves, Data(run.key), Data(run.signature)])
    }

    func keepCertificate(_ certificate: [UInt8], of key: [UInt8]) throws {
        try tx.db.cachedStatement(sql: "INSERT OR IGNORE INTO member_certificate (key, der) VALUES (?, ?)")
            .execute(arguments: [Data(key), Data(certificate)])
    }

    func keepGone(_ leaves: [RunLeaf], of writer: NodeID) throws { try tx.keepGone(leaves, of: writer) }

    func noteUnsignedOwnWrites() throws {
        try tx.db.cachedStatement(sql: "DELETE FROM meta WHERE key = 'own_writes_signed'").execute()
    }

    func updateItem(row: Int64, by change: DerivedChange) throws { try tx.updateItem(row: row, by: change) }

    func history(ofField row: Int64?) throws -> [(dot: Dot, write: String)] { try tx.history(ofField: row) }

    func versionVector() throws -> VersionVector { try ReplicaStore.versionVector(db: tx.db) }

    mutating func claimWriter() throws -> ClaimedWriter { try tx.claimWriter(lease: lease, name: nodeName) }

    func setCounter(of row: Int64, to counter: UInt64) throws { try tx.setCounter(of: row, to: counter) }

    mutating func loadItem(_ id: ItemID) throws -> LoadedItem { try tx.loadItem(id) }

    mutating func saveItem(_ id: ItemID, row: Int64?, state: ItemState) throws -> Int64 {
        guard let row else { return try tx.insertItem(id, from: state) }
        try tx.updateItem(row: row, from: state)
        return row
    }

    func trashWindow() throws -> UInt64 { try ReplicaStore.collectionSettings(db: tx.db).trashWindow }
}
