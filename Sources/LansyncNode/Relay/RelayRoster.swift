public import LansyncCore

/// The relays a node was given (`--relay`, in the order given) and the one it uses now.
///
/// A node keeps one relay at a time: the first listed, until it cannot be reached. Then it fails
/// over to the next in the list at once, and stays there while that one answers: relays of one
/// cluster hold the same replica (several addresses of one relay, or several relay processes on
/// one PostgreSQL), so there is nothing to gain from going back, and staying avoids flapping
/// between two relays that each answer now and then. Pure: the dial loop tells it what happened.
///
/// Guarantees: ``current`` is always one of ``addresses``; a failure moves to the next address
/// (wrapping), so every address is tried once before any is tried twice, and
/// ``failed(because:)`` says when a whole round has failed, for the loop to back off then.
public struct RelayRoster: Sendable, Equatable {
    /// The relays, in the order given; never empty.
    public let addresses: [PeerAddress]
    /// Index in ``addresses`` of the relay in use.
    public private(set) var index = 0
    /// How many times this node moved to another relay since it started.
    public private(set) var failovers = 0
    /// Why the node last moved to another relay, and from where; nil before any failover.
    public private(set) var lastFailover: Failover?
    /// The node id of the relay in use, once a session with it was claimed: whether it is
    /// connected is asked by id, whatever address the session came by.
    public private(set) var node: NodeID?
    /// Why the node has no session with a relay now, and since when; nil while the relay in use
    /// answers (its session reached up to date and has not ended since).
    public private(set) var problem: Problem?
    /// Failures in a row since a relay last answered: a round has failed when it reaches the
    /// number of addresses.
    private var failedInARow = 0

    /// A move from one relay to another.
    public struct Failover: Sendable, Equatable {
        public var from: PeerAddress
        public var to: PeerAddress
        public var reason: String
        /// Wall-clock milliseconds since 1970.
        public var at: UInt64
    }

    /// Why a node has no session with its relay: the last failure to reach one, or how the
    /// last session ended.
    public struct Problem: Sendable, Equatable {
        public var reason: String
        /// Wall-clock milliseconds since 1970: when the node last had a session with a relay, or
        /// when the first attempt failed (the problem's start, kept while it lasts).
        public var since: UInt64
    }

    /// Nil when `addresses` is empty (no relay configured).
    public init?(_ addresses: [PeerAddress]) {
        guard !addresses.isEmpty else { return nil }
        self.addresses = addresses
    }

    /// The relay in use.
    public var current: PeerAddress { addresses[index] }

    /// A session with the relay in use was claimed: it is `node`.
    public mutating func claimed(_ node: NodeID) { self.node = node }

    /// The relay in use answered and its session reached up to date.
    public mutating func answered() {
        failedInARow = 0
        problem = nil
    }

    /// The session with the relay in use ended after it was up to date (the relay stopped, the
    /// network dropped): no move yet, the node dials the same relay again at once.
    public mutating func lost(because reason: String, at milliseconds: UInt64) {
        problem = Problem(reason: reason, since: problem?.since ?? milliseconds)
    }

    /// The relay in use could not be reached, or its session broke before it was up to date.
    /// Moves to the next relay (when there is another) and says whether every relay has now
    /// failed in a row, in which case the caller waits before trying again.
    @discardableResult
    public mutating func failed(
        because reason: String,
        at milliseconds: UInt64
    ) -> (moved: Failover?, roundFailed: Bool) {
        failedInARow += 1
        problem = Problem(reason: "\(current): \(reason)", since: problem?.since ?? milliseconds)
        let roundFailed = failedInARow >= addresses.count
        if roundFailed { failedInARow = 0 }
        guard addresses.count > 1 else { return (nil, roundFailed) }
        let from = current
        index = (index + 1) % addresses.count
        node = nil
        failovers += 1
        let move = Failover(from: from, to: current, reason: reason, at: milliseconds)
        lastFailover = move
        return (move, roundFailed)
    }
}
