import LansyncCore
public import LansyncReplica

/// What `lansync status` shows: this node, its replica and every peer, as one value.
///
/// A running node answers it on its control socket; without a node it is built from the replica
/// alone (``StatusReport``). Its JSON form (NodeStatus+JSON.swift) is the contract of `status --json`
/// (Docs/CLI.md): the keys are snake_case and every key is present, `null` when it has no value.
public struct NodeStatus: Sendable, Equatable {
    public var nodeID: String
    public var name: String
    public var clusterID: String
    public var running: Bool
    /// False when a node runs on the directory (it took the request on its control socket) but
    /// did not answer in time (busy or stuck): the rest is then read from the replica file, as
    /// without a node. True otherwise.
    public var answering = true
    /// Where the node listens (nil without a running node).
    public var listen: String?
    /// Where the local API listens (`http://ADDR/v1`), nil without one.
    public var api: String?
    /// Where mDNS discovery stands (nil without a node).
    public var mdns: DiscoveryState?
    public var items: Int
    public var deleted: Int
    public var conflicts: Int
    /// Equal on replicas that have converged.
    public var digest: String
    /// Set when the replica was found damaged: writes are refused until it is repaired.
    public var damaged: String?
    /// Writer id (text) → counter: the version vector as this node tells it, without the
    /// writers it folded (Docs/MERGE.md, "Retired writers fold").
    public var versionVector: [String: UInt64]
    public var peers: [Peer]
    /// This node's own changes against the relay, when a relay is configured and known.
    public var changes: Changes?
    /// Permanent errors: this node's changes the relay refused (and overruled).
    public var rejected: [Rejection]
    /// Writes of revoked nodes made after their revocation's cut, which this replica refused
    /// (overruled, by this node or another member), newest first.
    public var revokedWrites: [Rejection]
    /// Connections refused for their certificate since the node started, newest first (empty
    /// without a running node).
    public var refused: [Refusal]
    /// How much of the replica is the past, and what holds its collection back.
    public var collection: Collection?
    /// Which members the running node keeps sessions with (Docs/SCALE.md); nil without a node.
    public var view: View?
    /// The relays the running node was given and the one it uses (``RelayRoster``); nil without
    /// a running node or without `--relay`.
    public var relays: Relays?
    /// On a relay that shares the authority (`lansync relay --authority`): whether it settles
    /// conflicts now, and if not who does or why it cannot tell; nil on any other node.
    public var authority: SettlingStanding?

    /// The running node's view of the cluster: a full mesh while it is small, else a bounded
    /// active view chosen from a passive one.
    public struct View: Sendable, Equatable {
        /// "full mesh" or "bounded".
        public var mode: String
        /// The sessions the node dials towards.
        public var target: Int
        /// Each member of the active view (node id) and why it is there: "full mesh", "chosen"
        /// (this node dialled it to fill the view), "accepted" (it dialled this node, which had
        /// room), "rescued" (it dialled while it had no session at all).
        public var active: [Member]
        /// Members known beyond the active view.
        public var passive: Int
        /// Within how many hops of its origin a change goes over every session (protocol 1.11,
        /// ``HopRecord/flood(forClusterOf:)``); 0 below 400 members.
        public var flood = 0

        public struct Member: Sendable, Equatable {
            public var nodeID: String
            public var reason: String

            public init(nodeID: String, reason: String) {
                self.nodeID = nodeID
                self.reason = reason
            }
        }

        public init(mode: String, target: Int, active: [Member], passive: Int, flood: Int = 0) {
            self.mode = mode
            self.target = target
            self.active = active
            self.passive = passive
            self.flood = flood
        }

        /// "bounded: 6 sessions of a target of 5 (5 chosen, 1 accepted), 24 more members known".
        public var summary: String {
            let reasons = Dictionary(grouping: active, by: \.reason).sorted { $0.key < $1.key }
                .map { "\($0.value.count) \($0.key)" }.joined(separator: ", ")
            return "\(mode): \(active.count) session(s) of a target of \(target)"
                + (reasons.isEmpty ? "" : " (\(reasons))") + ", \(passive) more member(s) known"
                + (flood > 0 ? "; a change goes over every session within \(flood) hops of its origin" : "")
        }
    }

    /// The past in the replica (Docs/MERGE.md, "Causal stability and collection").
    public struct Collection: Sendable, Equatable {
        /// Field rows of live items.
        public var liveFields: Int
        /// Deleted items not collected yet, and their field rows.
        public var collectableItems: Int
        public var collectableFields: Int
        /// Items reduced to their minimal tombstone.
        public var collectedItems: Int
        /// Minimal tombstones purged, an away window after their collection.
        public var purgedItems: Int
        public var fileBytes: Int
        public var freeBytes: Int
        /// When the stable frontier last moved (ISO 8601), nil if never.
        public var frontierAt: String?
        /// The member that holds the frontier back (node id), nil when none does.
        public var heldBackBy: String?
        /// Members away or forgotten (node ids): they hold nothing back.
        public var departed: [String]
        /// When this node last rejoined from a snapshot (ISO 8601), nil if never.
        public var rejoinedAt: String?
        /// Since when this node counts itself away, or its replica (put back from a copy) is
        /// older than the away window (ISO 8601): it refuses no one's state and collects nothing
        /// without the others. Nil if neither.
        public var awaySince: String?
        /// Since when its replica, put back from a copy older than the away window, waits to
        /// rejoin from a current member (ISO 8601); nil if it does not.
        public var staleSince: String?
        /// Collection rounds the running node finished since it started (nil without one): a round
        /// that collects nothing leaves no other trace, and a test that a round did not collect
        /// something waits on this.
        public var rounds: Int?

        public init(
            liveFields: Int,
            collectableItems: Int,
            collectableFields: Int,
            collectedItems: Int,
            purgedItems: Int = 0,
            fileBytes: Int,
            freeBytes: Int,
            frontierAt: String?,
            heldBackBy: String?,
            departed: [String],
            rejoinedAt: String? = nil,
            awaySince: String? = nil,
            staleSince: String? = nil
        ) {
            self.liveFields = liveFields
            self.collectableItems = collectableItems
            self.collectableFields = collectableFields
            self.collectedItems = collectedItems
            self.purgedItems = purgedItems
            self.fileBytes = fileBytes
            self.freeBytes = freeBytes
            self.frontierAt = frontierAt
            self.heldBackBy = heldBackBy
            self.departed = departed
            self.rejoinedAt = rejoinedAt
            self.awaySince = awaySince
            self.staleSince = staleSince
        }
    }

    public init(
        nodeID: String,
        name: String,
        clusterID: String,
        running: Bool,
        listen: String?,
        mdns: DiscoveryState?,
        items: Int,
        deleted: Int,
        conflicts: Int,
        digest: String,
        damaged: String?,
        versionVector: [String: UInt64],
        peers: [Peer],
        changes: Changes?,
        rejected: [Rejection],
        revokedWrites: [Rejection] = [],
        refused: [Refusal] = [],
        collection: Collection? = nil
    ) {
        self.nodeID = nodeID
        self.name = name
        self.clusterID = clusterID
        self.running = running
        self.listen = listen
        self.mdns = mdns
        self.items = items
        self.deleted = deleted
        self.conflicts = conflicts
        self.digest = digest
        self.damaged = damaged
        self.versionVector = versionVector
        self.peers = peers
        self.changes = changes
        self.rejected = rejected
        self.revokedWrites = revokedWrites
        self.refused = refused
        self.collection = collection
    }

    /// One peer: a known node (direct, or met only through others), or a configured address not
    /// reached yet.
    public struct Peer: Sendable, Equatable {
        public var nodeID: String?
        public var name: String?
        public var address: String?
        /// Every address mDNS last saw it advertised at, in the order they are dialled.
        public var advertised: [String] = []
        public var source: PeerSource?
        public var path: Path
        public var connected: Bool
        public var lastSync: String?
        /// How many field states it lacks (nil for an address whose node is not known yet).
        public var lacks: Int?
        public var lastError: String?
        /// The current session's counters (nil for a node met only through others).
        public var counters: SessionCounters?
        public var roundTripsWaited: Int?
        /// The peer's wall clock minus this node's at its last hello (ms); nil if unknown.
        public var clockOffsetMs: Int?
        /// The peer's delta under way, when it announced its size.
        public var receiving: Receiving?

        public init(nodeID: String?, name: String?, path: Path, connected: Bool) {
            self.nodeID = nodeID
            self.name = name
            self.path = path
            self.connected = connected
        }

        /// How far the peer's delta to this node has got: field states received of about how many,
        /// and the time left at the rate so far (nil until there is a rate).
        public struct Receiving: Sendable, Equatable {
            public var received: Int
            public var expected: Int
            public var etaSeconds: Int?

            public init(received: Int, expected: Int, etaSeconds: Int?) {
                self.received = received
                self.expected = expected
                self.etaSeconds = etaSeconds
            }

            /// The time left at the rate so far, in seconds, from `received` of about `expected`
            /// field states since `since` (wall milliseconds); nil without a rate (under half a
            /// second, nothing received yet, or a clock stepped back). `expected` is what the
            /// peer announced: bounded where it is decoded, and the result saturates whatever
            /// the rate (2^64-1 at under one field state a second trapped before issue 62).
            public static func secondsLeft(received: Int, expected: Int, since: UInt64, now: UInt64) -> Int? {
                let elapsed = now > since ? Double(now - since) / 1000 : 0
                guard elapsed > 0.5, received > 0 else { return nil }
                let rate = Double(received) / elapsed
                return max(0, Int(saturating: ((Double(expected) - Double(received)) / rate).rounded(.up)))
            }

            /// "41,210 of ~100,000 (41%, 12 s left)".
            public var summary: String {
                let percent = expected > 0 ? min(100, Int(saturating: Double(received) * 100 / Double(expected))) : 0
                let left = etaSeconds.map { ", \(Self.duration($0)) left" } ?? ""
                return "\(Self.grouped(received)) of ~\(Self.grouped(expected)) (\(percent)%\(left))"
            }

            /// 41210 as "41,210", whatever the locale (status output is read by scripts too).
            public static func grouped(_ n: Int) -> String {
                let digits = String(n.magnitude)
                var out = ""
                for (i, c) in digits.enumerated() {
                    if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
                    out.append(c)
                }
                return (n < 0 ? "-" : "") + out
            }

            static func duration(_ seconds: Int) -> String {
                seconds < 90 ? "\(seconds) s" : seconds < 5400 ? "\(seconds / 60) min" : "\(seconds / 3600) h"
            }
        }

        /// How this node's changes reach the peer.
        public enum Path: String, Sendable {
            case direct
            case relay
            case viaRelay = "via relay"
            case viaOtherPeers = "via other peers"
        }
    }

    /// Where this node's own changes stand against the relay (`relay`, its id), or with no relay
    /// against every peer this node knows (`relay` null): `synced` (the relay has them, or every
    /// known peer has), and `syncing` (a session with one of those is open) or `dirty` (waiting).
    public struct Changes: Sendable, Equatable {
        public var relay: String?
        public var synced: Int
        public var syncing: Int?
        public var dirty: Int?
        /// The most recent of them, newest first.
        public var recent: [Change]
    }

    /// One of this node's own field changes.
    public struct Change: Sendable, Equatable {
        public var id: String
        public var field: String
        public var counter: UInt64
        public var state: State

        public enum State: String, Sendable {
            case synced = "SYNCED"
            case syncing = "SYNCING"
            case dirty = "DIRTY"
        }
    }

    /// A connection refused for its certificate: from or to `address`, why (starting with the
    /// stable code, e.g. `wrong-cluster:`), how often, and when last.
    public struct Refusal: Sendable, Equatable {
        public var address: String
        public var reason: String
        public var count: Int
        public var last: String
    }

    /// A change of this node's that the relay refused.
    public struct Rejection: Sendable, Equatable {
        public var id: String
        public var field: String
        public var counter: UInt64
        public var reason: String
    }
}
