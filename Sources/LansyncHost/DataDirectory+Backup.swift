import LansyncIdentity
public import LansyncStore
import LansyncTransport

/// Backups of a data directory's replica: taken while its node runs, put back while it is
/// stopped (Docs/OPERATIONS.md, "Backups").
extension DataDirectory {
    /// Writes a consistent copy of the replica to `file` (SQLite's online backup: the node and
    /// other commands go on meanwhile). Refuses an existing `file` unless `replacing`.
    public func backup(to file: String, replacing: Bool = false) throws -> BackupSummary {
        try open().backup(to: file, replacing: replacing, wallMilliseconds: WallClock.milliseconds)
    }

    /// Puts the replica back to the backup in `file`, which must be one of this node's replica
    /// (its cluster and node id as `node.pem` and `cluster.pem` say). Holds the node lock, so it
    /// refuses while a node runs here; keeps the replaced replica beside the new one.
    public func restoreBackup(from file: String) throws -> RestoreReport {
        try refuseIfReplicaInPostgres()
        let lock = try NodeLock(directory: self)
        defer { lock.release() }
        let identity = try tlsIdentity()
        return try ReplicaStore.restore(
            backup: file,
            into: replicaPath,
            node: identity.nodeID,
            cluster: identity.trust.clusterID
        )
    }
}
