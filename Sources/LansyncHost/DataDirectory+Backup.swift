import LansyncIdentity
import LansyncReplica
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

    /// Says this directory's replica, put back from a copy older than the away window, is
    /// current: for when every member's replica is such a copy and each waits for a current one
    /// (Docs/MERGE.md, "Stale or away"). Since when it was stale, or nil if it was not (then
    /// nothing changes).
    public func acceptCopy() throws -> UInt64? {
        let store = try open()
        try refuseUnlessRelayOrNone(store)
        return try store.acceptAsCurrent(now: WallClock.milliseconds)
    }

    /// In a cluster with a relay, only the relay speaks for a copy: a member's copy accepted as
    /// current would merge into a current relay the deletes it purged since.
    private func refuseUnlessRelayOrNone(_ store: ReplicaStore) throws {
        guard let relay = try store.relayID(), relay != (try store.info().nodeID) else { return }
        throw HostError(
            "this cluster has a relay (\(relay.short)): run 'lansync backup accept' on the relay, never on a member; a member put back from a copy rejoins from the relay once the relay is current"
        )
    }

    /// Names the member this directory's stale replica may rejoin from even though that member
    /// is away itself (the relay waits for a current member and none comes): the member and
    /// since when the replica was stale, or nil if it is not (then nothing changes).
    public func acceptRejoin(from name: String) throws -> (DataDirectory.Member, UInt64)? {
        let store = try open()
        try refuseUnlessRelayOrNone(store)
        let member = try self.member(named: name, store: store)
        guard !member.isThisNode else { throw HostError("'\(name)' is this machine: name another member") }
        return try store.acceptRejoin(from: member.nodeID, now: WallClock.milliseconds).map { (member, $0) }
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
