public import LansyncCore
import NIOConcurrencyHelpers

/// Tells every open session that the local replica changed (a local edit, or a batch from another
/// peer), so each pushes what its peer lacks. Notifications coalesce: a session that is busy
/// sees one pending change, however many happened.
///
/// A notification carries the replica's version vector as read after the change, and the hub
/// keeps the latest (``knownVersion``). It is never ahead of the file (it only ever holds what was
/// read from it), and any later change comes with its own notification, so a session whose peer
/// already covers it can skip an anti-entropy delta, and send its summary, without reading SQLite.
/// A local edit is announced before its vector is read (``notifyUnread()``): the sessions it
/// wakes read the replica themselves, and the vector follows (``learn(version:)``).
public final class ChangeHub: Sendable {
    private let subscribers = NIOLockedValueBox<[Int: AsyncStream<Void>.Continuation]>([:])
    private let nextID = NIOLockedValueBox(0)
    private let version = NIOLockedValueBox<VersionVector?>(nil)
    /// What each subscriber's peer is known to hold (``record(_:peerHolds:)``, joined).
    private let peers = NIOLockedValueBox<[Int: VersionVector]>([:])
    /// Subscribers woken by a change announced before its vector was read (``notifyUnread()``)
    /// that have not yet asked for the vector to act on (``version(for:)``).
    private let unread = NIOLockedValueBox<Set<Int>>([])
    /// How far each writer's newest change travelled (protocol 1.11, Docs/SCALE.md "Spread").
    private let hops = NIOLockedValueBox(HopRecord(writer: nil))
    /// Subscribers woken by a change near its origin (``HopRecord/floods(_:)``): they send it
    /// at once even over a pruned session (``eager(for:)``).
    private let near = NIOLockedValueBox<Set<Int>>([])
    private let changes = NIOLockedValueBox<UInt64>(0)
    private let resetCount = NIOLockedValueBox(0)
    /// The deltas' opening reads, shared by sessions of one ``generation`` (``DeltaStarts``).
    let deltaStarts = DeltaStarts()

    /// How many changes were announced (or the vector reset): moved before the sessions a change
    /// wakes are woken, so a session that heard of a change holds a larger generation than any
    /// read made before it (``DeltaStarts``).
    public var generation: UInt64 { changes.withLockedValue { $0 } }

    /// The replica's version vector as last read and announced; nil until then, or after a read
    /// failed (sessions then read the replica themselves).
    public var knownVersion: VersionVector? { version.withLockedValue { $0 } }

    public init() {}

    /// A stream that yields once per (coalesced) change until the subscription is dropped.
    public func subscribe() -> (id: Int, changes: AsyncStream<Void>) {
        let id = nextID.withLockedValue {
            $0 += 1
            return $0
        }
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        subscribers.withLockedValue { $0[id] = continuation }
        return (id, stream)
    }

    public func unsubscribe(_ id: Int) {
        subscribers.withLockedValue { $0.removeValue(forKey: id) }?.finish()
        _ = peers.withLockedValue { $0.removeValue(forKey: id) }
        _ = unread.withLockedValue { $0.remove(id) }
        _ = near.withLockedValue { $0.remove(id) }
    }

    /// The writer this node's own edits are made under: they are 0 hops away.
    public func setWriter(_ writer: NodeID) {
        hops.withLockedValue { $0.writer = writer }
    }

    /// How many members the node knows the cluster has: how far a change floods
    /// (``HopRecord/flood(forClusterOf:)``).
    public func setClusterSize(_ members: Int) {
        hops.withLockedValue { $0.flood = HopRecord.flood(forClusterOf: members) }
    }

    /// Within how many hops of its origin a change goes over every session (``HopRecord/flood``).
    public var flood: Int { hops.withLockedValue { $0.flood } }

    /// The hops to stamp on a batch of the changes `vector` names (``HopRecord/hops(of:)``).
    public func hops(of vector: VersionVector) -> UInt8? {
        hops.withLockedValue { $0.hops(of: vector) }
    }

    /// Records a batch applied (``HopRecord/applied(covers:hops:changed:held:)``): true when it
    /// changed nothing but is a copy the flood near its origin was expected to bring.
    public func applied(covers: VersionVector, hops sent: UInt8?, changed: Int, held: VersionVector?) -> Bool {
        hops.withLockedValue { $0.applied(covers: covers, hops: sent, changed: changed, held: held) }
    }

    /// Whether subscriber `id`, woken, sends the change at once even over a pruned session;
    /// asked once per wake-up.
    public func eager(for id: Int) -> Bool {
        near.withLockedValue { $0.remove(id) != nil }
    }

    /// The vector subscriber `id` acts on when woken: nil (its session reads the replica) once
    /// after a change announced before its vector was read, else ``knownVersion``.
    public func version(for id: Int) -> VersionVector? {
        unread.withLockedValue { $0.remove(id) != nil } ? nil : knownVersion
    }

    /// Announces a change at once, before its vector is read: every subscriber woken reads the
    /// replica itself (``version(for:)``), so a live edit goes out without waiting for a read of
    /// the vector first; ``learn(version:)`` then records the vector, waking no one. (Announcing
    /// the vector known before the change instead would let a session whose peer covers it skip
    /// the change.)
    public func notifyUnread() {
        changes.withLockedValue { $0 += 1 }
        let targets = subscribers.withLockedValue { subscribers in
            unread.withLockedValue { $0.formUnion(subscribers.keys) }
            // This node's own edit: the nearest a change can be to its origin.
            if hops.withLockedValue({ $0.floods(0) }) { near.withLockedValue { $0.formUnion(subscribers.keys) } }
            return subscribers
        }
        for continuation in targets.values { continuation.yield() }
    }

    /// Records a vector read from the replica, as ``notify(version:except:)`` does, without
    /// waking anyone.
    public func learn(version current: VersionVector) {
        // The reading may hold a later change not yet announced: a session that acts on it holds
        // a newer generation than any read made before it.
        changes.withLockedValue { $0 += 1 }
        version.withLockedValue { known in known = known?.joined(with: current) ?? current }
    }

    /// How many times the vector was reset (``reset(version:)``): a session that sees this move
    /// records its peer's whole vector again, since a reset forgets what each peer holds.
    public var resets: Int { resetCount.withLockedValue { $0 } }

    /// Records that subscriber `id`'s peer holds `vector` too (what its session learnt since it
    /// last said), for ``wakeLagging()``.
    public func record(_ id: Int, peerHolds vector: VersionVector) {
        peers.withLockedValue { $0[id, default: VersionVector()].join(vector) }
    }

    /// Anti-entropy for the whole node at once: wakes (as a change would) only the subscribers
    /// whose peer is not known to hold everything this replica holds, or all of them when the
    /// replica's vector is unknown. A node whose peers hold everything wakes no session.
    public func wakeLagging() {
        let known = knownVersion
        let lagging = peers.withLockedValue { peers in
            subscribers.withLockedValue { subscribers in
                subscribers.filter { id, _ in
                    guard let known, let held = peers[id] else { return true }
                    return !held.covers(known)
                }
            }
        }
        for continuation in lagging.values { continuation.yield() }
    }

    /// Forgets the vector known so far and takes `current` instead: the one time the replica's
    /// vector shrinks (a rejoin empties the replica), where ``notify(version:except:)`` only joins.
    public func reset(version current: VersionVector?) {
        changes.withLockedValue { $0 += 1 }
        resetCount.withLockedValue { $0 += 1 }
        version.withLockedValue { $0 = current }
        peers.withLockedValue { $0.removeAll() }
    }

    /// Announces a change, with the version vector read after it (nil if it could not be read);
    /// `except` skips the subscriber that caused it; `hops`: how many sessions the change
    /// crossed to reach this node, when known.
    public func notify(version current: VersionVector?, except: Int? = nil, hops arrived: UInt8? = nil) {
        // Before the vector: a session that sees the change in it holds the new generation.
        changes.withLockedValue { $0 += 1 }
        // Reads race, but each is a true reading of a vector that only grows: their join is too.
        version.withLockedValue { known in known = current.map { known?.joined(with: $0) ?? $0 } }
        let targets = subscribers.withLockedValue { $0.filter { $0.key != except } }
        if hops.withLockedValue({ $0.floods(arrived) }) {
            near.withLockedValue { $0.formUnion(targets.keys) }
        }
        for continuation in targets.values { continuation.yield() }
    }
}
