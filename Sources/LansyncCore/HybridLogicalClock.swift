/// A hybrid logical clock timestamp: wall-clock milliseconds in the high 48 bits, a logical
/// counter in the low 16.
///
/// Timestamps only order *concurrent* writes (which sibling is shown). Causality never depends on
/// them: a write supersedes exactly what its writer had seen, whatever the timestamps say.
public struct HLCTimestamp: Hashable, Comparable, Sendable {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(milliseconds: UInt64, logical: UInt16) {
        rawValue = (milliseconds << 16) | UInt64(logical)
    }

    public var milliseconds: UInt64 { rawValue >> 16 }
    public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public static let zero = HLCTimestamp(rawValue: 0)
}

/// A hybrid logical clock (Kulkarni et al.): monotonic even when the wall clock jumps backwards,
/// and pulled forward by the timestamps a node receives so that a write made after seeing another
/// carries a larger timestamp even if this machine's clock is behind.
///
/// The wall clock is passed in (the core reads no clock). A remote timestamp further than
/// ``maxForwardDrift`` ahead of our wall clock is clamped, so one machine whose clock is set years
/// ahead cannot drag every node's clock with it.
public struct HybridLogicalClock: Hashable, Sendable {
    public private(set) var latest: HLCTimestamp

    /// How far ahead of the local wall clock a received timestamp may pull this clock: one day.
    public static let maxForwardDrift: UInt64 = 86_400_000

    public init(latest: HLCTimestamp = .zero) { self.latest = latest }

    /// A new timestamp, strictly greater than any this clock has issued or observed, unless this
    /// clock stands further than ``maxForwardDrift`` ahead of the wall clock: then it comes back
    /// to the wall clock.
    ///
    /// A clock once set years ahead would otherwise keep every later write of this replica years
    /// ahead, winning every tie-break for as long. Coming back is safe: timestamps only order
    /// concurrent versions, and a later local write is never concurrent with an earlier one
    /// (causality decides; DESIGN invariant 3), nor is a dot ever taken from the clock.
    public mutating func tick(wallMilliseconds: UInt64) -> HLCTimestamp {
        let wall = min(wallMilliseconds, (1 << 48) - 1)
        if latest.milliseconds > wall &+ Self.maxForwardDrift {
            latest = HLCTimestamp(milliseconds: wall, logical: 0)
            return latest
        }
        if wall > latest.milliseconds {
            latest = HLCTimestamp(milliseconds: wall, logical: 0)
        } else if latest.logical < UInt16.max {
            latest = HLCTimestamp(rawValue: latest.rawValue + 1)
        } else {
            latest = HLCTimestamp(milliseconds: latest.milliseconds + 1, logical: 0)
        }
        return latest
    }

    /// Takes a timestamp seen on a remote write into account.
    public mutating func observe(_ remote: HLCTimestamp, wallMilliseconds: UInt64) {
        let ceiling = HLCTimestamp(
            milliseconds: min(wallMilliseconds &+ Self.maxForwardDrift, (1 << 48) - 1),
            logical: UInt16.max
        )
        let bounded = min(remote, ceiling)
        if bounded > latest { latest = bounded }
    }
}
