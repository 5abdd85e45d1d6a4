/// Exponential backoff with full jitter, capped: how long to wait before the next attempt to
/// reach a peer. Deterministic given its random source, so tests can check its bounds.
public struct Backoff: Sendable {
    public let initial: Duration
    public let maximum: Duration
    public private(set) var attempt = 0

    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The ceiling of the next wait: initial × 2^attempt, at most ``maximum``.
    public var ceiling: Duration {
        var d = initial
        for _ in 0..<min(attempt, 30) where d < maximum { d = d * 2 }
        return min(d, maximum)
    }

    /// The next wait: uniformly random in [ceiling/2, ceiling] ("equal jitter"), then the
    /// ceiling doubles.
    public mutating func next(using random: inout some RandomNumberGenerator) -> Duration {
        let c = ceiling
        attempt += 1
        let half = c / 2
        let spread = Double.random(in: 0...1, using: &random)
        return half + half * spread
    }

    /// After a permanent error there is no point in hurrying: wait the maximum.
    public mutating func giveUpForNow() { attempt = 30 }

    public mutating func reset() { attempt = 0 }
}
