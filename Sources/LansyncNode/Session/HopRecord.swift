public import LansyncCore
import LansyncReplica

/// How many sessions each writer's newest change crossed to reach this node: what lets a change
/// go to every peer while it is near where it was made, and down the spread tree after
/// (Docs/SCALE.md, "Spread"; protocol 1.11).
///
/// Pruned sessions form one tree for every origin, and one tree is deep for most of them: at a
/// thousand simulated nodes a change crossed 18–23 sessions to reach the last node. So every batch
/// says how many sessions its changes crossed (``Message/reached(hops:_:)``), and a
/// node that got a change within ``flood`` hops of its origin (its own edits at 0) sends it at
/// once over every session, pruned ones too; a second copy that came within ``flood`` hops was
/// expected and prunes nothing. The change enters the tree at the hundreds of nodes of that
/// ball instead of at one: 10 hops at a thousand nodes instead of 18, for about one more copy per
/// node and change (1.6–1.7 in all, issue 33's bound is 2).
///
/// A pure value: the node keeps one for all its sessions, tells it each batch applied, and asks it
/// what to stamp on what it sends. It holds one entry per writer the replica holds a change of
/// (a batch's covers may name writers the store could not verify: those are never recorded), at
/// most ``maxEntries``, and lives in memory only (after a restart no hop is known, and changes go
/// down the tree until new ones come).
public struct HopRecord: Sendable {
    struct Entry: Sendable {
        var counter: UInt64
        var hops: UInt8
    }

    /// The writer this node issues its own edits under: its changes are 0 hops away.
    public var writer: NodeID?
    /// Within this many hops of where it was made, a change goes at once over every session.
    public var flood: Int
    private var entries: [NodeID: Entry] = [:]
    /// The most writers remembered: the most a replica takes (``WriterBounds/standard``). Past
    /// it the record starts again: hop counts are hints, and losing them only costs depth.
    public static let maxEntries = WriterBounds.standard.total

    public init(writer: NodeID?, flood: Int = 0) {
        self.writer = writer
        self.flood = flood
    }

    /// The ball a change floods, for a cluster of about `members` (``MemberSketch``): none below
    /// 400 (the tree alone reaches every node within 7–14 hops there, and on real nodes sharing
    /// a machine the flood's copies cost more CPU than its hops save: W9 at 200), then about the
    /// most hops whose ball of 5.5 new members a hop stays within the cluster, a step early for a
    /// count that lags while the cluster forms (3 from 400, 4 from 700, 5 from 4,000). A ball
    /// larger than the cluster costs duplicates (every session of its nodes carries the change),
    /// a smaller one depth; the simulation measured both (Docs/SCALE.md, "Near the origin").
    public static func flood(forClusterOf members: Int) -> Int {
        guard members >= 400 else { return 0 }
        return 3 + [700, 4000].filter { members >= $0 }.count
    }

    /// Whether a change that reached this node after `hops` hops (0: its own edit) goes at once
    /// over every session.
    public func floods(_ hops: UInt8?) -> Bool {
        hops.map { Int($0) < flood } ?? false
    }

    /// The hops a batch's changes took to reach this node, when its sender said.
    public static func arrived(_ hops: UInt8?) -> UInt8? {
        guard let hops else { return nil }
        return hops == caughtUp ? 0 : min(hops, farthest - 1) + 1
    }

    /// The most hops a node tells (``Message/reached(hops:_:)``); farther counts stay there.
    public static let farthest: UInt8 = 254

    /// What a node takes as the hops of a batch of a peer's first delta (a catch-up: a session
    /// that began after a partition, a restart, a round of anti-entropy): what it brings was
    /// missing here, and spreads from here as if made here (the hops before say nothing of the
    /// way ahead). Never sent: a stamp is at most ``farthest``.
    public static let caughtUp: UInt8 = .max

    /// The hops to tell with a batch of the changes `vector` names: the fewest of them (nil when
    /// none has a known distance).
    public func hops(of vector: VersionVector) -> UInt8? {
        var best: UInt8?
        for (node, counter) in vector.counters {
            let hops: UInt8? = node == writer ? 0 : entries[node].flatMap { $0.counter >= counter ? $0.hops : nil }
            if let hops { best = min(best ?? hops, hops) }
        }
        return best
    }

    /// A batch covering `covers` was applied, its changes `hops` away from the peer that sent it
    /// (nil: it did not say); `changed`: how many field states it changed; `held`: the replica's
    /// version vector after it (only the writers it names are recorded: a peer's covers may name
    /// writers the store refused to count). Returns whether a batch that changed nothing is a copy
    /// the flood was expected to bring (its session stays eager).
    public mutating func applied(covers: VersionVector, hops: UInt8?, changed: Int, held: VersionVector?) -> Bool {
        let arrived = Self.arrived(hops)
        guard changed > 0 else {
            guard flood > 0 else { return false }
            // A copy within the flood, or the tree's copy of a change the flood brought first:
            // neither says the session is redundant (pruning on the second would cut the tree
            // a little more at every change's ball, and the cut links would wait for grafts).
            if let arrived, Int(arrived) <= flood { return true }
            return covers.counters.contains { node, counter in
                entries[node].map { $0.counter == counter && Int($0.hops) <= flood } ?? false
            }
        }
        guard let held else { return false }
        for (node, counter) in covers.counters
        where node != writer && counter > entries[node]?.counter ?? 0 && held[node] >= counter {
            if let arrived {
                if entries[node] == nil, entries.count >= Self.maxEntries { entries.removeAll() }
                entries[node] = Entry(counter: counter, hops: arrived)
            } else {
                entries[node] = nil
            }
        }
        return false
    }
}
