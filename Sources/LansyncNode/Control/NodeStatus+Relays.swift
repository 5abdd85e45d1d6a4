import LansyncReplica

extension NodeStatus {
    /// The relays a running node was given, the one in use, and its last failover.
    public struct Relays: Sendable, Equatable {
        /// The relay in use (`host:port`).
        public var current: String
        /// Every relay given, in order.
        public var addresses: [String]
        /// How many times the node moved to another relay since it started.
        public var failovers: Int
        /// The last move, nil before any.
        public var lastFailover: Failover?
        /// Whether the node has a session with the relay in use now; nil from a node that does
        /// not say (before issue 63).
        public var connected: Bool?
        /// Why it has none, and since when; nil while connected (or before the first attempt).
        public var problem: Problem?

        /// Why a node is not connected to its relay, as `status` and `doctor` say it.
        public struct Problem: Sendable, Equatable {
            public var reason: String
            /// ISO 8601, UTC: since when the node has had no session with a relay; nil when it
            /// has not had one since it started.
            public var since: String?

            public init(reason: String, since: String?) {
                self.reason = reason
                self.since = since
            }
        }

        /// One move from a relay to the next, as `status` shows it.
        public struct Failover: Sendable, Equatable {
            public var from: String
            public var to: String
            public var reason: String
            /// ISO 8601, UTC.
            public var at: String

            public init(from: String, to: String, reason: String, at: String) {
                self.from = from
                self.to = to
                self.reason = reason
                self.at = at
            }
        }

        public init(
            current: String,
            addresses: [String],
            failovers: Int,
            lastFailover: Failover?,
            connected: Bool? = true,
            problem: Problem? = nil
        ) {
            self.current = current
            self.addresses = addresses
            self.failovers = failovers
            self.lastFailover = lastFailover
            self.connected = connected
            self.problem = problem
        }
    }
}

extension NodeStatus.Relays {
    /// What `status` shows of a roster.
    public init(_ roster: RelayRoster, connected: Bool) {
        self.init(
            current: roster.current.description,
            addresses: roster.addresses.map(\.description),
            failovers: roster.failovers,
            lastFailover: roster.lastFailover.map {
                Failover(
                    from: $0.from.description,
                    to: $0.to.description,
                    reason: $0.reason,
                    at: WallClock.iso8601(milliseconds: $0.at)
                )
            },
            connected: connected,
            problem: connected
                ? nil
                : Problem(
                    reason: roster.problem?.reason ?? "connecting (no answer yet)",
                    since: roster.problem.map { WallClock.iso8601(milliseconds: $0.since) }
                )
        )
    }

    /// "127.0.0.1:7421 (2 of 2), connected; failed over 1 time(s), last from 127.0.0.1:7420 at
    /// ...: why", or "127.0.0.1:7420 (1 of 1), NOT CONNECTED since ...: why".
    public var summary: String {
        let place = (addresses.firstIndex(of: current) ?? 0) + 1
        var text = "\(current) (\(place) of \(addresses.count))"
        switch connected {
        case true?: text += ", connected"
        case false?:
            text += ", NOT CONNECTED"
            if let problem { text += "\(problem.since.map { " since \($0)" } ?? ""): \(problem.reason)" }
        case nil: break
        }
        if let last = lastFailover {
            text += "; failed over \(failovers) time(s), last from \(last.from) at \(last.at): \(last.reason)"
        }
        return text
    }
}
