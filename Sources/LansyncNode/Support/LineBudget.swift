import LansyncReplica
import NIOConcurrencyHelpers

/// A budget of log lines of one kind per minute, for lines that others can cause at will
/// (connections from many addresses, a storm of mDNS adverts): past it they are dropped until the
/// next minute, and the last line that fits says so. The log stays readable and bounded whatever
/// a stranger sends (DESIGN invariants 5 and 6).
final class LineBudget: Sendable {
    enum Verdict: Equatable {
        /// Log the line.
        case log
        /// Log the line, saying that more of its kind will not be logged this minute.
        case lastThisMinute
        /// Drop it.
        case drop

        /// What a line logged under this verdict ends with.
        var note: String { self == .lastThisMinute ? " (no more such lines this minute)" : "" }
    }

    let perMinute: Int
    private let state = NIOLockedValueBox((minute: UInt64(0), used: 0))

    init(perMinute: Int) { self.perMinute = perMinute }

    func take(now: UInt64 = WallClock.milliseconds) -> Verdict {
        state.withLockedValue { state in
            let minute = now / 60_000
            if minute != state.minute { state = (minute, 0) }
            state.used += 1
            if state.used < perMinute { return .log }
            return state.used == perMinute ? .lastThisMinute : .drop
        }
    }
}
