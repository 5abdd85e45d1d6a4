public import LansyncCore
import LansyncReplica
public import LansyncStore

/// Local edits through the host: each is one transaction, then a running node is nudged to push
/// it, and the user is told when the edit had to start a new writer because the replica was
/// found rolled back.
extension DataDirectory {
    /// Performs one edit on the replica; returns its dot.
    @discardableResult
    public func edit(_ edit: ItemEdit, on id: ItemID, in store: any ReplicaStorage) throws -> Dot {
        let dot = try store.apply(edit, to: id, wallMilliseconds: WallClock.milliseconds)
        noteNewWriter(store, issued: dot)
        nudgeNode()
        return dot
    }

    /// Says so when a write had to start a new writer because this replica was found rolled back
    /// (a restored backup or snapshot): the user should know that peers will send back what the
    /// restore lost. A new writer after a reboot is routine and goes unsaid.
    func noteNewWriter(_ store: any ReplicaStorage, issued dot: Dot) {
        guard dot.counter == 1, let writer = try? store.writers().last, writer.id == dot.node else { return }
        switch writer.reason {
        case .restored:
            note(
                "this replica holds less than it had written before (restored from a backup or snapshot?): it now writes as \(dot.node.short), and peers will send back what the restore lost"
            )
        case .witness:
            note(
                "a peer holds more of this replica's writes than it does (restored from a backup or snapshot?): it now writes as \(dot.node.short), and peers will send back what it lost"
            )
        case .`init`, .unproven, .copied, .repair, .named, .rejoin, .role:
            break
        }
    }

    /// Rebuilds a damaged replica from what is sound in it (``ReplicaStore/repair(path:wallMilliseconds:lease:)``),
    /// holding the node lock so that no node runs meanwhile.
    public func repair() throws -> RepairReport {
        try refuseIfReplicaInPostgres()
        let lock = try NodeLock(directory: self)
        defer { lock.release() }
        return try ReplicaStore.repair(path: replicaPath, wallMilliseconds: WallClock.milliseconds)
    }
}
