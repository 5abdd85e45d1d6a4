import LansyncStore

extension NodeStatus.Relays {
    /// What `status` shows of a roster.
    public init(_ roster: RelayRoster) {
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
            }
        )
    }

    /// "127.0.0.1:7421 (2 of 2); failed over 1 time(s), last from 127.0.0.1:7420 at ...: why".
    public var summary: String {
        let place = (addresses.firstIndex(of: current) ?? 0) + 1
        var text = "\(current) (\(place) of \(addresses.count))"
        if let last = lastFailover {
            text += "; failed over \(failovers) time(s), last from \(last.from) at \(last.at): \(last.reason)"
        }
        return text
    }
}
