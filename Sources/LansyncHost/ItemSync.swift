public import LansyncCore
public import LansyncJSON
public import LansyncReplica

/// Whether this machine's latest edit of an item has left it: what `get`, `list --json` and
/// `list --dirty` show, judged from what each peer was last known to hold (its version vector as
/// the peer table keeps it, refreshed by every session).
///
/// - ``State/dirty``: no other machine is known to have the edit;
/// - ``State/syncing``: some have it, but not yet the relay (or, with no relay, not every known peer);
/// - ``State/synced``: the relay has it, or, with no relay, every known peer has it.
///
/// An item with no live edit of this machine's (never edited here, or every such edit superseded
/// by a later one from elsewhere, which proves it left) has no sync state.
public struct ItemSync: Sendable, Equatable {
    public enum State: String, Sendable {
        case dirty = "DIRTY"
        case syncing = "SYNCING"
        case synced = "SYNCED"
    }

    public let state: State
    /// The peers known to hold the edit.
    public let holders: [Holder]

    /// A peer known to hold an edit: its node id, and its name when the replica knows it.
    public struct Holder: Sendable, Equatable {
        public let nodeID: NodeID
        public let name: String?
    }

    /// The state of an edit whose dots are `edit`, given the peers this replica knows.
    public init(edit: VersionVector, peers: [PeerRecord]) {
        holders = peers.filter { $0.versionVector.covers(edit) }.map { Holder(nodeID: $0.nodeID, name: $0.name) }
        if let relay = peers.first(where: { $0.source == .relay }) {
            state = relay.versionVector.covers(edit) ? .synced : holders.isEmpty ? .dirty : .syncing
        } else if holders.isEmpty {
            state = .dirty
        } else {
            state = holders.count == peers.count ? .synced : .syncing
        }
    }

    /// `{"state": "SYNCED", "peers": [{"node": ID, "name": NAME}]}`.
    public var json: JSON {
        .object([
            ("state", .string(state.rawValue)),
            (
                "peers",
                .array(
                    holders.map { peer in
                        .object([("node", .string(peer.nodeID.text)), ("name", peer.name.map(JSON.string) ?? .null)])
                    }
                )
            ),
        ])
    }
}

extension StoredItem {
    /// ``jsonText`` with the item's sync state last (`"sync": null` when it has none): what
    /// `get --json` and `list --json` print.
    public func jsonText(sync: ItemSync?) -> String { Item(self, sync: sync).jsonText }
}

extension ItemSync {
    /// The sync state of `item`'s latest edit made here, or nil if it has none: `item` read
    /// with `withLocalEdits` (its ``StoredItem/localEdit``).
    public static func of(_ item: StoredItem, in store: any ReplicaStorage) throws -> ItemSync? {
        guard let edit = item.localEdit else { return nil }
        // A member forgotten or away no longer decides whether an edit has left.
        let departed = try store.departedMembers(now: WallClock.milliseconds)
        return ItemSync(edit: edit, peers: try store.peers().filter { !departed.contains($0.nodeID) })
    }
}
