public import LansyncCore

/// Which members a node keeps sessions with (issue 33, Docs/SCALE.md): a small active view
/// and a larger passive view of members it knows of, after HyParView (Leitão, Pereira and
/// Rodrigues, 2007).
///
/// A session is symmetric (one TLS connection carries changes both ways), so the active view is
/// too: a peer is in it whichever side dialled. The node dials members of its passive view until
/// its active view holds ``Limits/active`` peers, and accepts a peer that dials it while it holds
/// fewer than ``Limits/active`` + ``Limits/slack`` (always, when the peer has no session at all:
/// a member alone is never left out). So every node keeps between `active` and
/// `active + slack` sessions once the cluster is larger than ``Limits/fullMeshUpTo``, and a
/// random graph of that degree is connected with overwhelming probability; below it, the view
/// is the whole cluster, as before the view existed.
///
/// The passive view is filled from every source (mDNS, `--peer`, the relay, the members other
/// members pass on in their hellos) and bounded: past ``Limits/passive`` a random member makes
/// room, so what a member claims costs a bounded table. A member that cannot be reached is kept
/// (a partition heals) but tried last, and is the first to make room.
///
/// The type is a value with no I/O and no clock: every random choice takes the caller's
/// generator, so the simulation replays a run from its seed.
public struct PeerView: Sendable, Equatable {
    /// The view's sizes.
    public struct Limits: Sendable, Equatable {
        /// The sessions a node dials towards; HyParView's active view, log10(N) + 1 rounded up
        /// for N up to 10,000.
        public var active: Int
        /// How many more a node accepts when members dial it: a joining member finds room
        /// without anyone being dropped.
        public var slack: Int
        /// The members known beyond the active view.
        public var passive: Int
        /// Up to this many members in all (this node included), every member is in the view.
        public var fullMeshUpTo: Int

        public init(active: Int = 5, slack: Int = 3, passive: Int = 30, fullMeshUpTo: Int = 8) {
            precondition(active > 0 && slack >= 0 && passive > 0)
            self.active = active
            self.slack = slack
            self.passive = passive
            self.fullMeshUpTo = fullMeshUpTo
        }
    }

    /// Why a peer is in the active view (what `status` shows).
    public enum Reason: String, Sendable, Equatable {
        /// The cluster is small enough for a session with every member.
        case fullMesh = "full mesh"
        /// This node dialled it to fill its view.
        case chosen
        /// It dialled this node, which had room.
        case accepted
        /// It dialled this node while it had no session at all.
        case rescued
    }

    /// A member of the passive view: how many dials to it failed in a row.
    public struct Known: Sendable, Equatable {
        public var failures = 0
    }

    public let me: NodeID
    public let limits: Limits
    public private(set) var active: [NodeID: Reason] = [:]
    public private(set) var passive: [NodeID: Known] = [:]
    /// Members being dialled: neither offered again nor counted as active yet.
    public private(set) var dialling: Set<NodeID> = []

    public init(me: NodeID, limits: Limits = Limits()) {
        self.me = me
        self.limits = limits
    }

    /// How many members the cluster has as members report them (their hellos' reports of each
    /// other's progress), this node included; 0 until one does.
    public private(set) var reportedMembers = 0

    /// Every member this node knows of, itself included: in its views, or reported (a member
    /// whose passed-on peers are few still learns that the cluster is large).
    public var clusterSize: Int { max(active.count + passive.count + 1, reportedMembers) }

    /// Members reported `members` in the cluster, this node among them.
    public mutating func heard(ofMembers members: Int) {
        reportedMembers = max(reportedMembers, members)
    }

    /// Whether the cluster is small enough for a session with everyone.
    public var isFullMesh: Bool { clusterSize <= limits.fullMeshUpTo }

    /// How many sessions the node dials towards.
    public var target: Int { isFullMesh ? clusterSize - 1 : limits.active }

    /// Takes members a source names (never this node, nor one in the active view); past the
    /// passive bound, the member with most failed dials makes room, else a random one.
    public mutating func learn(_ members: some Sequence<NodeID>, using rng: inout some RandomNumberGenerator) {
        for member in members where member != me && active[member] == nil && passive[member] == nil {
            passive[member] = Known()
            if passive.count > limits.passive { evict(sparing: member, using: &rng) }
        }
    }

    /// The members to dial now so the active view reaches ``target`` (none being dialled or
    /// active), those with fewest failed dials first, at random among equals.
    public mutating func toDial(using rng: inout some RandomNumberGenerator) -> [NodeID] {
        let missing = target - active.count - dialling.count
        guard missing > 0 else { return [] }
        let candidates = Self.shuffled(passive.keys.filter { !dialling.contains($0) }, using: &rng)
            .enumerated().sorted {
                (passive[$0.element]!.failures, $0.offset) < (passive[$1.element]!.failures, $1.offset)
            }
            .prefix(missing).map(\.element)
        dialling.formUnion(candidates)
        return candidates
    }

    /// Whether to keep a session `peer` opened; `alone`: the peer says it has no other session.
    public func accepts(_ peer: NodeID, alone: Bool) -> Bool {
        if active[peer] != nil || isFullMesh || alone { return true }
        return active.count < limits.active + limits.slack
    }

    /// A session with `peer` is open (dialled, or accepted after ``accepts(_:alone:)``).
    public mutating func opened(_ peer: NodeID, dialled: Bool, alone: Bool = false) {
        guard peer != me else { return }
        let wasDialling = dialling.remove(peer) != nil
        passive[peer] = nil
        let reason: Reason =
            isFullMesh ? .fullMesh : dialled || wasDialling ? .chosen : alone ? .rescued : .accepted
        active[peer] = reason
    }

    /// The session with `peer` ended: it goes back to the passive view (it may come back).
    public mutating func closed(_ peer: NodeID, using rng: inout some RandomNumberGenerator) {
        guard active.removeValue(forKey: peer) != nil else { return }
        passive[peer] = Known()
        if passive.count > limits.passive { evict(sparing: peer, using: &rng) }
    }

    /// A dial to `peer` failed (unreachable, or it had no room): it is tried last from now on.
    public mutating func failed(_ peer: NodeID) {
        dialling.remove(peer)
        if active[peer] == nil { passive[peer, default: Known()].failures += 1 }
    }

    /// The node restarted: every session ended, and the peers it had are known still.
    public mutating func restarted() {
        for peer in active.keys { passive[peer] = Known() }
        active = [:]
        dialling = []
    }

    /// Sessions beyond what the view keeps, to close: none while the active view is within
    /// `active + slack` (or the cluster is small); past it, random ones, never a member let in
    /// because it was alone while another can go (it would be alone again).
    public func excess(using rng: inout some RandomNumberGenerator) -> [NodeID] {
        let keep = isFullMesh ? Int.max : limits.active + limits.slack
        guard active.count > keep else { return [] }
        let extra = active.count - keep
        let shuffled = Self.shuffled(Array(active.keys), using: &rng)
        let others = shuffled.filter { active[$0] != .rescued }
        return Array((others + shuffled.filter { active[$0] == .rescued }).prefix(extra))
    }

    /// A member outside the active view for a round of anti-entropy (a short session that heals
    /// what pushes missed), at random among the reachable ones; nil when there is none.
    public func antiEntropyPartner(using rng: inout some RandomNumberGenerator) -> NodeID? {
        let fewest = passive.values.map(\.failures).min()
        let candidates = passive.filter { $0.value.failures == fewest }.keys.sorted()
        return candidates.isEmpty ? nil : candidates[Int(rng.next(upperBound: UInt64(candidates.count)))]
    }

    /// Up to `count` members to pass on to `peer` (its hello's addresses): some of the active view
    /// and some of the passive, never `peer` itself, chosen at random, so members' passive views
    /// mix as HyParView's shuffle mixes them.
    public func sample(_ count: Int, for peer: NodeID, using rng: inout some RandomNumberGenerator) -> [NodeID] {
        let reachable = passive.filter { $0.value.failures == 0 }.keys
        let pool = (Array(active.keys) + reachable).filter { $0 != peer }
        return Array(Self.shuffled(pool, using: &rng).prefix(count))
    }

    /// `ids` in an order drawn from `rng` alone (not from the order a dictionary holds them in).
    private static func shuffled(_ ids: [NodeID], using rng: inout some RandomNumberGenerator) -> [NodeID] {
        ids.sorted().shuffled(using: &rng)
    }

    private mutating func evict(sparing kept: NodeID, using rng: inout some RandomNumberGenerator) {
        let candidates = passive.filter { $0.key != kept && !dialling.contains($0.key) }
        guard let most = candidates.values.map(\.failures).max() else { return }
        let worst = candidates.filter { $0.value.failures == most }.keys.sorted()
        passive[worst[Int(rng.next(upperBound: UInt64(worst.count)))]] = nil
    }
}
