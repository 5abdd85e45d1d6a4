import Foundation
import LansyncCore
public import LansyncStore

/// Builds ``NodeStatus`` from the replica, and from the running node's registry when one runs.
public enum StatusReport {
    /// - Parameters:
    ///   - peers: the running node's live view; nil when no node runs (the recorded peers are used).
    ///   - digests: a running node's cache of the replica's digest.
    public static func make(
        store: ReplicaStore,
        running: Bool,
        listen: String?,
        peers live: [PeerRegistry.Entry]?,
        discovery: String? = nil,
        digests: ReplicaDigest.Cache? = nil,
        refused: [NodeStatus.Refusal] = []
    ) throws(StoreError) -> NodeStatus {
        let info = try store.info()
        let vv = try store.versionVector()
        let counts = try store.counts()
        let digest = if let digests { try digests.digest(store) } else { try ReplicaDigest.compute(store) }
        var peers: [PeerRegistry.Entry]
        if let live {
            peers = live
        } else {
            peers = try store.peers().filter { $0.nodeID != info.nodeID }.map {
                PeerRegistry.Entry(
                    nodeID: $0.nodeID,
                    name: $0.name,
                    address: $0.address,
                    source: $0.source,
                    connected: false,
                    lastSync: $0.lastSync,
                    lastError: $0.lastError,
                    versionVector: $0.versionVector
                )
            }
        }
        var shown: [NodeStatus.Peer] = []
        for p in peers {
            var peer = NodeStatus.Peer(
                nodeID: p.nodeID?.text,
                name: p.name,
                path: p.source == .relay ? .relay : .direct,
                connected: p.connected
            )
            peer.address = p.address
            peer.source = p.source
            peer.lastSync = p.lastSync.map { WallClock.iso8601(milliseconds: $0) }
            peer.lacks = p.nodeID == nil ? nil : try store.lacking(p.versionVector)
            peer.lastError = p.lastError
            peer.sentUpdates = p.sentUpdates
            peer.receivedUpdates = p.receivedUpdates
            peer.sentBytes = p.sentBytes
            peer.receivedBytes = p.receivedBytes
            peer.roundTripsWaited = p.waitedRoundTrips
            if let r = p.receiving {
                let elapsed = Double(WallClock.milliseconds &- r.since) / 1000
                let rate = elapsed > 0.5 && r.received > 0 ? Double(r.received) / elapsed : nil
                peer.receiving = NodeStatus.Peer.Receiving(
                    received: r.received,
                    expected: r.expected,
                    etaSeconds: rate.map { Int((Double(max(0, r.expected - r.received)) / $0).rounded(.up)) }
                )
            }
            shown.append(peer)
        }
        // The nodes known only through others.
        let relayEntry = peers.first { $0.source == .relay && $0.nodeID != nil }
        let names = try store.nodeNames()
        let directIDs = Set(peers.compactMap(\.nodeID))
        let ownWriters = Set(try store.writers().map(\.id)).union([info.nodeID])
        for node in vv.nodes where !ownWriters.contains(node) && !directIDs.contains(node) {
            shown.append(
                NodeStatus.Peer(
                    nodeID: node.text,
                    name: names[node],
                    path: relayEntry != nil ? .viaRelay : .viaOtherPeers,
                    connected: false
                )
            )
        }
        // This node's own changes, against the relay when there is one, else against every peer
        // it knows (a change is on all of them once the least of their vectors covers it).
        var changes: NodeStatus.Changes?
        let judges = relayEntry.map { [$0] } ?? peers.filter { $0.nodeID != nil }
        if !judges.isEmpty {
            var seen = VersionVector()
            for writer in ownWriters { seen.raise(writer, to: judges.map { $0.versionVector[writer] }.min() ?? 0) }
            let local = try store.localChanges(limit: 20, seenBy: seen)
            let pending: NodeStatus.Change.State = judges.contains(where: \.connected) ? .syncing : .dirty
            changes = NodeStatus.Changes(
                relay: relayEntry?.nodeID?.text,
                synced: local.atOrBelow,
                syncing: pending == .syncing ? local.above : nil,
                dirty: pending == .dirty ? local.above : nil,
                recent: local.recent.map {
                    NodeStatus.Change(
                        id: $0.item.rawValue,
                        field: $0.field.rawValue,
                        counter: $0.counter,
                        state: $0.seen ? .synced : pending
                    )
                }
            )
        }
        return NodeStatus(
            nodeID: info.nodeID.text,
            name: info.nodeName,
            clusterID: info.clusterID.text,
            running: running,
            listen: listen,
            mdns: discovery,
            items: counts.items,
            deleted: counts.deleted,
            conflicts: counts.conflicts,
            digest: digest,
            damaged: store.damage,
            versionVector: Dictionary(uniqueKeysWithValues: vv.nodes.map { ($0.text, vv[$0]) }),
            peers: shown,
            changes: changes,
            rejected: try store.ownRejections().map {
                NodeStatus.Rejection(
                    id: $0.item.rawValue,
                    field: $0.field.rawValue,
                    counter: $0.counter,
                    reason: $0.reason
                )
            },
            revokedWrites: try store.revokedWriteRejections().map {
                NodeStatus.Rejection(
                    id: $0.item.rawValue,
                    field: $0.field.rawValue,
                    counter: $0.counter,
                    reason: $0.reason
                )
            },
            refused: refused
        )
    }
}
