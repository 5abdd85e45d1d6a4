public import LansyncCore

/// What lets one of several relays settle conflicts, and makes each settlement the cluster's one
/// decision: the host builds it from a lease in PostgreSQL (`lansync relay --authority`,
/// Docs/RELAY.md "Several relays, one authority"). Without one, a relay settles alone, as before.
///
/// Guarantees asked of an implementation: ``holds`` is false whenever another relay may settle;
/// ``decide`` returns, for a given conflict (item, field, the dots of its concurrent versions),
/// the same value to every relay that asks, and throws rather than decide without the lease.
public struct SettlingGate: Sendable {
    /// Keeps or seeks the right to settle until the calling task is cancelled; calls `acquired`
    /// each time this relay gains it.
    public var keep: @Sendable (_ acquired: @escaping @Sendable () async -> Void) async -> Void
    /// Whether this relay may settle now.
    public var holds: @Sendable () async -> Bool
    /// The value `conflict` is settled with: `proposed` (what this relay's policy picks) if it is
    /// the first decision for it, else the recorded one.
    public var decide: @Sendable (_ conflict: FieldConflict, _ proposed: Value?) async throws -> Value?
    /// Where this relay stands, for `status`.
    public var standing: @Sendable () async -> SettlingStanding
    /// Forgets the decisions made longer ago than the given milliseconds (the holder only), and
    /// says how many went: the node passes how long a silent member may still come back without
    /// rejoining from a snapshot.
    public var forget: @Sendable (_ olderThanMilliseconds: UInt64) async throws -> Int

    public init(
        keep: @escaping @Sendable (_ acquired: @escaping @Sendable () async -> Void) async -> Void,
        holds: @escaping @Sendable () async -> Bool,
        decide: @escaping @Sendable (_ conflict: FieldConflict, _ proposed: Value?) async throws -> Value?,
        standing: @escaping @Sendable () async -> SettlingStanding,
        forget: @escaping @Sendable (_ olderThanMilliseconds: UInt64) async throws -> Int
    ) {
        self.keep = keep
        self.holds = holds
        self.decide = decide
        self.standing = standing
        self.forget = forget
    }
}

/// Where a relay that shares the authority stands (`status`'s `authority`): whether it settles
/// conflicts now, and if not, who does or why it cannot tell.
public enum SettlingStanding: Sendable, Equatable {
    /// It has not asked the database yet.
    case starting
    /// It holds the lease at this fencing epoch and settles conflicts.
    case holding(epoch: Int64)
    /// It held the lease at this epoch but has not renewed it in time (the database is slow or
    /// gone): it settles nothing until it renews, and another relay may take over.
    case lapsed(epoch: Int64)
    /// Another relay holds the lease (its holder text: name, node id, process) and settles.
    case following(holder: String, epoch: Int64)
    /// The database cannot be reached (why): no relay settles through this one meanwhile.
    case unreachable(String)
}
