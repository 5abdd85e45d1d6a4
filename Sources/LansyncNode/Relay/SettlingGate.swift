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

    public init(
        keep: @escaping @Sendable (_ acquired: @escaping @Sendable () async -> Void) async -> Void,
        holds: @escaping @Sendable () async -> Bool,
        decide: @escaping @Sendable (_ conflict: FieldConflict, _ proposed: Value?) async throws -> Value?
    ) {
        self.keep = keep
        self.holds = holds
        self.decide = decide
    }
}
