import Foundation
public import LansyncCore
public import LansyncJSON
public import LansyncStore

/// What `lansync status` shows: this node, its replica, and every peer. Built from the replica
/// alone when no node runs, and from the running node's registry when one does.
public struct StatusReport: Sendable {
    public var json: JSON

    /// - Parameters:
    ///   - peers: the running node's live view; nil when no node runs (the recorded peers are used).
    ///   - digests: a running node's cache of the replica's digest.
    public static func make(store: ReplicaStore, running: Bool, listen: String?, peers live: [PeerRegistry.Entry]?, discovery: String? = nil,
                            digests: ReplicaDigest.Cache? = nil) throws(StoreError) -> StatusReport {
        let info = try store.info()
        let vv = try store.versionVector()
        let counts = try store.counts()
        let digest = if let digests { try digests.digest(store) } else { try ReplicaDigest.compute(store) }
        var peers: [PeerRegistry.Entry]
        if let live { peers = live } else {
            peers = try store.peers().filter { $0.nodeID != info.nodeID }.map {
                PeerRegistry.Entry(nodeID: $0.nodeID, name: $0.name, address: $0.address, source: $0.source, connected: false, lastSync: $0.lastSync, lastError: $0.lastError, versionVector: $0.versionVector)
            }
        }
        var peerJSON: [JSON] = []
        for p in peers {
            let lacks = p.nodeID == nil ? JSON.null : JSON.integer(Int64(try store.lacking(p.versionVector)))
            peerJSON.append(.object([
                ("node_id", p.nodeID.map { .string($0.text) } ?? .null),
                ("name", p.name.map(JSON.string) ?? .null),
                ("address", p.address.map(JSON.string) ?? .null),
                ("source", .string(p.source)),
                ("connected", .bool(p.connected)),
                ("last_sync", p.lastSync.map { .string(Self.time($0)) } ?? .null),
                ("lacks", lacks),
                ("last_error", p.lastError.map(JSON.string) ?? .null),
                ("sent_updates", .integer(Int64(p.sentUpdates))),
                ("received_updates", .integer(Int64(p.receivedUpdates))),
                ("sent_bytes", .integer(Int64(p.sentBytes))),
                ("received_bytes", .integer(Int64(p.receivedBytes))),
                ("round_trips_waited", .integer(Int64(p.waitedRoundTrips))),
            ]))
        }
        // Each peer's path: the relay itself, or direct; and the nodes known only through others.
        for i in peerJSON.indices {
            guard case .object(var members) = peerJSON[i] else { continue }
            members.append(("path", .string(peers[i].source == "relay" ? "relay" : "direct")))
            peerJSON[i] = .object(members)
        }
        let relayEntry = peers.first { $0.source == "relay" && $0.nodeID != nil }
        let names = try store.nodeNames()
        let directIDs = Set(peers.compactMap(\.nodeID))
        let ownWriters = Set(try store.writers().map(\.id)).union([info.nodeID])
        for node in vv.nodes where !ownWriters.contains(node) && !directIDs.contains(node) {
            peerJSON.append(.object([
                ("node_id", .string(node.text)), ("name", names[node].map(JSON.string) ?? .null),
                ("path", .string(relayEntry != nil ? "via relay" : "via other peers")), ("connected", .bool(false)),
            ]))
        }
        // This node's own changes against the relay: SYNCED (the relay has them), SYNCING (a
        // session with the relay is open, they are being handed over), DIRTY (waiting).
        var changesJSON = JSON.null
        if let relay = relayEntry, let relayID = relay.nodeID {
            let local = try store.localChanges(limit: 20, seenBy: relay.versionVector)
            let pending = relay.connected ? "SYNCING" : "DIRTY"
            changesJSON = .object([
                ("relay", .string(relayID.text)),
                ("synced", .integer(Int64(local.atOrBelow))),
                (pending.lowercased(), .integer(Int64(local.above))),
                ("recent", .array(local.recent.map { change in
                    .object([("id", .string(change.item.rawValue)), ("field", .string(change.field.rawValue)),
                             ("counter", .integer(Int64(clamping: change.counter))),
                             ("state", .string(change.seen ? "SYNCED" : pending))])
                })),
            ])
        }
        let rejected = try store.ownRejections()
        let vvJSON = JSON.object(vv.nodes.map { ($0.text, JSON.integer(Int64(clamping: vv[$0]))) })
        return StatusReport(json: .object([
            ("node_id", .string(info.nodeID.text)),
            ("name", .string(info.nodeName)),
            ("cluster_id", .string(info.clusterID.text)),
            ("running", .bool(running)),
            ("listen", listen.map(JSON.string) ?? .null),
            ("mdns", discovery.map(JSON.string) ?? .null),
            ("items", .integer(Int64(counts.items))),
            ("deleted", .integer(Int64(counts.deleted))),
            ("conflicts", .integer(Int64(counts.conflicts))),
            ("digest", .string(digest)),
            // Set when the replica was found damaged: writes are refused until it is repaired.
            ("damaged", store.damage.map(JSON.string) ?? .null),
            ("version_vector", vvJSON),
            ("peers", .array(peerJSON)),
            ("changes", changesJSON),
            // Permanent errors: this node's changes the relay refused (and overruled).
            ("rejected", .array(rejected.map { r in
                .object([("id", .string(r.item.rawValue)), ("field", .string(r.field.rawValue)),
                         ("counter", .integer(Int64(clamping: r.counter))), ("reason", .string(r.reason))])
            })),
        ]))
    }

    static func time(_ ms: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
