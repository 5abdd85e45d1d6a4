import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// This replica's identity and its writers: who it is, under which writer id it writes, and
// when a new writer starts (Docs/STORAGE.md, "Writers").
extension ReplicaStore {
    /// This replica's identity and settings.
    public func info() throws(StoreError) -> ReplicaInfo {
        try guarded { try database.read { db in try info(db: db) } }
    }

    /// ``info()`` read on `db`: a write reads it in its own transaction, not in a read of its own
    /// before (one reader transaction less per edit and per received batch: 0.2 ms of W5's path).
    func info(db: Database) throws -> ReplicaInfo {
        let meta = try Dictionary(
            uniqueKeysWithValues: Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT key, value FROM meta WHERE key IN
                        ('node_id', 'cluster_id', 'node_name', 'fingerprint', 'history_limit', 'writer_id')
                        """
                )
            ).map { ((try $0.decode(atIndex: 0) as String), (try $0.decode(atIndex: 1) as String)) }
        )
        guard let node = meta["node_id"].flatMap(NodeID.init(text:)),
            let cluster = meta["cluster_id"].flatMap(NodeID.init(text:))
        else { throw StoreError.corrupt(path: path, detail: "its identity is missing from table meta") }
        return ReplicaInfo(
            nodeID: node,
            clusterID: cluster,
            nodeName: meta["node_name"] ?? "",
            fingerprint: meta["fingerprint"] ?? "",
            historyLimit: Int(meta["history_limit"] ?? "") ?? ReplicaConstants.defaultHistoryLimit,
            writerID: meta["writer_id"].flatMap(NodeID.init(text:)) ?? node
        )
    }

    /// Switches this replica to a new node identity (after a copied data directory was detected).
    /// Writes of the old id stay valid data; new writes use the new id, so two directories never
    /// issue dots under one id.
    public func adoptIdentity(nodeID: NodeID, fingerprint: String) throws(StoreError) {
        try guarded {
            try database.write { db in
                let name = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'node_name'")
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'node_id'", arguments: [nodeID.text])
                try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'fingerprint'", arguments: [fingerprint])
                try db.execute(
                    sql: "INSERT OR IGNORE INTO node(node_id, name) VALUES (?, ?)",
                    arguments: [nodeID.text, name]
                )
                try Transaction.startWriter(nodeID, name: name, reason: .copied, db: db)
            }
        }
        lease.record(nodeID, stamp: try changeStamp())
    }

    /// Records the display name of a node (learnt from its hello).
    public func setNodeName(_ name: String, for node: NodeID) throws(StoreError) {
        try guarded {
            try database.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO node(node_id, name) VALUES (?, ?) ON CONFLICT(node_id) DO UPDATE SET name = excluded.name",
                    arguments: [node.text, name]
                )
            }
        }
    }

    /// Checks the writer's continuity now, as a process that will sync starts: a replica found
    /// rolled back (or on a new boot) takes a new writer before it says hello, so its peers see a
    /// new incarnation (``StreamResume``). Returns the writer to announce.
    @discardableResult
    public func renewWriterIfUnproven() throws(StoreError) -> NodeID {
        try guarded {
            try write { tx, me in .commit(try tx.claimWriter(lease: lease, name: me.nodeName).id) }
        }
    }

    /// Takes a peer's version vector (its hello) into account: if the peer holds more of this
    /// replica's current writer than the replica does, the replica was rolled back, and the writer
    /// is retired (the next local write starts a new one). Returns true if it was retired now.
    @discardableResult
    public func noteWitness(_ peer: VersionVector) throws(StoreError) -> Bool {
        // Read first: a session start should not take the write lock for nothing.
        let current = try info().writerID
        guard peer[current] > (try versionVector())[current] else { return false }
        return try guarded { try write { tx, _ in .commit(try tx.retireWriterIfWitnessed(by: peer)) } }
    }

    /// A number that grows with every transaction that changed a field: equal numbers mean the
    /// replica shows the same thing.
    public func changeStamp() throws(StoreError) -> UInt64 {
        try guarded { try database.read { db in try Self.changeStamp(db: db) } }
    }

    static func changeStamp(db: Database) throws -> UInt64 {
        UInt64(try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'changes'")) ?? "0") ?? 0
    }

    /// This replica's write identities, oldest first.
    public func writers() throws(StoreError) -> [WriterRecord] {
        try guarded {
            try database.read { db in
                try Row.fetchAll(db, sql: "SELECT writer_id, started, reason FROM writer ORDER BY seq").compactMap {
                    row in
                    guard let id = NodeID(text: (try row.decode(atIndex: 0))) else { return nil }
                    return WriterRecord(
                        id: id,
                        started: UInt64(max(0, (try row.decode(atIndex: 1) as Int64))),
                        reason: WriterRecord.Reason(rawValue: (try row.decode(atIndex: 2))) ?? .unproven
                    )
                }
            }
        }
    }
}
