import Foundation
import LansyncCore
public import LansyncReplica

/// Builds ``NodeStatus`` from the replica, and from the running node's registry when one runs.
public enum StatusReport {
    /// - Parameters:
    ///   - peers: the running node's live view; nil when no node runs (the recorded peers are used).
    ///   - digest: a running node's digest, from its cache (``ReplicaDigest/Cache``); nil: computed
    ///     from the replica here (every item read).
    public static func make(
        store: any ReplicaStorage,
        running: Bool,
        listen: String?,
        peers live: [PeerRegistry.Entry]?,
        discovery: DiscoveryState? = nil,
        digest known: String? = nil,
        refused: [NodeStatus.Refusal] = []
    ) throws(StoreError) -> NodeStatus {
        let info = try store.info()
        let (vv, folded) = try store.announcedVectors()
        let told = vv.folded(by: folded)
        let counts = try store.counts()
        let digest = if let known { known } else { try ReplicaDigest.compute(store) }
        let peers = if let live { live } else { try recordedPeers(store, except: info.nodeID) }
        // With several relays, the one in use (connected) speaks for them.
        let relayEntry =
            peers.first { $0.source == .relay && $0.nodeID != nil && $0.connected }
            ?? peers.first { $0.source == .relay && $0.nodeID != nil }
        let ownWriters = Set(try store.writers().map(\.id)).union([info.nodeID])
        var shown: [NodeStatus.Peer] = []
        for peer in peers { shown.append(try shownPeer(peer, store: store)) }
        shown += try indirectPeers(
            of: vv,
            known: peers,
            ownWriters: ownWriters,
            me: info.nodeID,
            viaRelay: relayEntry != nil,
            store: store
        )
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
            versionVector: Dictionary(uniqueKeysWithValues: told.nodes.map { ($0.text, told[$0]) }),
            peers: shown,
            changes: try changes(store, peers: peers, relay: relayEntry, ownWriters: ownWriters),
            rejected: try store.ownRejections().map(NodeStatus.Rejection.init),
            revokedWrites: try store.revokedWriteRejections(limit: StoreDefaults.revokedRejections).map(
                NodeStatus.Rejection.init
            ),
            refused: refused,
            collection: try collection(store)
        )
    }

    /// The past in the replica, as status shows it.
    private static func collection(_ store: any ReplicaStorage) throws(StoreError) -> NodeStatus.Collection {
        let f = try store.collectionFigures(now: WallClock.milliseconds)
        return NodeStatus.Collection(
            liveFields: f.liveFields,
            collectableItems: f.collectableItems,
            collectableFields: f.collectableFields,
            collectedItems: f.collectedItems,
            purgedItems: f.purgedItems,
            fileBytes: f.fileBytes,
            freeBytes: f.freeBytes,
            frontierAt: f.frontierAt.map { WallClock.iso8601(milliseconds: $0) },
            heldBackBy: f.heldBackBy?.text,
            departed: f.departed.map(\.text),
            rejoinedAt: f.rejoinedAt.map { WallClock.iso8601(milliseconds: $0) },
            awaySince: f.awaySince.map { WallClock.iso8601(milliseconds: $0) },
            staleSince: f.staleSince.map { WallClock.iso8601(milliseconds: $0) }
        )
    }

    /// The peers the replica recorded, for a status with no node running.
    private static func recordedPeers(
        _ store: any ReplicaStorage,
        except me: NodeID
    ) throws(StoreError) -> [PeerRegistry.Entry] {
        let recorded = try store.peers()
        return recorded.filter { $0.nodeID != me }.map {
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

    /// A peer this node meets itself, as status shows it.
    private static func shownPeer(
        _ p: PeerRegistry.Entry,
        store: any ReplicaStorage
    ) throws(StoreError) -> NodeStatus.Peer {
        var peer = NodeStatus.Peer(
            nodeID: p.nodeID?.text,
            name: p.name,
            path: p.source == .relay ? .relay : .direct,
            connected: p.connected
        )
        peer.address = p.address
        peer.advertised = p.advertised
        peer.source = p.source
        peer.lastSync = p.lastSync.map { WallClock.iso8601(milliseconds: $0) }
        peer.lacks = p.nodeID == nil ? nil : try store.lacking(p.versionVector, cap: StoreDefaults.lackingCap)
        peer.lastError = p.lastError
        peer.counters = p.counters
        peer.roundTripsWaited = p.waitedRoundTrips
        peer.clockOffsetMs = p.clockOffset.map { Int(clamping: $0) }
        if let r = p.receiving {
            peer.receiving = NodeStatus.Peer.Receiving(
                received: r.received,
                expected: r.expected,
                etaSeconds: NodeStatus.Peer.Receiving.secondsLeft(
                    received: r.received,
                    expected: r.expected,
                    since: r.since,
                    now: WallClock.milliseconds
                )
            )
        }
        return peer
    }

    /// The nodes known only through others: the nodes of the writers in the version vector that
    /// are neither this node's nor a peer's it meets, each once. A writer id names its node
    /// (``LansyncCore/NodeID/isWriter(of:)``): a node that took a new writer (a restored
    /// backup, a rollback, a reboot) is still one node, shown under its node id when a peer or
    /// a member's report names it, never as a member of its own (issue 63).
    private static func indirectPeers(
        of vv: VersionVector,
        known peers: [PeerRegistry.Entry],
        ownWriters: Set<NodeID>,
        me: NodeID,
        viaRelay: Bool,
        store: any ReplicaStorage
    ) throws(StoreError) -> [NodeStatus.Peer] {
        let names = try store.nodeNames()
        let direct = Set(peers.compactMap(\.nodeID))
        let nodes = direct.union(try store.memberReports().map(\.nodeID))
        var groups: [UInt64: [NodeID]] = [:]
        for writer in vv.nodes where !ownWriters.contains(writer) && !writer.isWriter(of: me) {
            guard !direct.contains(where: { writer.isWriter(of: $0) }) else { continue }
            groups[writer.high, default: []].append(writer)
        }
        return groups.values.map { writers in
            let node = writers.first { nodes.contains($0) } ?? writers.min { $0.text < $1.text } ?? writers[0]
            return NodeStatus.Peer(
                nodeID: node.text,
                name: names[node] ?? writers.lazy.compactMap { names[$0] }.first,
                path: viaRelay ? .viaRelay : .viaOtherPeers,
                connected: false
            )
        }.sorted { $0.nodeID ?? "" < $1.nodeID ?? "" }
    }

    /// This node's own changes, against the relay when there is one, else against every peer it
    /// knows (a change is on all of them once the least of their vectors covers it); nil when it
    /// knows none.
    private static func changes(
        _ store: any ReplicaStorage,
        peers: [PeerRegistry.Entry],
        relay: PeerRegistry.Entry?,
        ownWriters: Set<NodeID>
    ) throws(StoreError) -> NodeStatus.Changes? {
        // A member forgotten or away no longer decides whether a change has left (unless it is
        // connected again, which makes it a member again at its next report).
        let departed = try store.departedMembers(now: WallClock.milliseconds)
        let judges =
            relay.map { [$0] }
            ?? peers.filter { $0.nodeID.map { !departed.contains($0) } ?? false || $0.connected }
            .filter { $0.nodeID != nil }
        guard !judges.isEmpty else { return nil }
        var seen = VersionVector()
        for writer in ownWriters { seen.raise(writer, to: judges.map { $0.versionVector[writer] }.min() ?? 0) }
        let local = try store.localChanges(limit: 20, seenBy: seen)
        let pending: NodeStatus.Change.State = judges.contains(where: \.connected) ? .syncing : .dirty
        return NodeStatus.Changes(
            relay: relay?.nodeID?.text,
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
}

extension NodeStatus.Rejection {
    /// A write the replica refused, as status shows it.
    init(_ rejection: LansyncReplica.Rejection) {
        self.init(
            id: rejection.item.rawValue,
            field: rejection.field.rawValue,
            counter: rejection.counter,
            reason: rejection.reason
        )
    }
}
