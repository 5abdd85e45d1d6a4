import LansyncReplica
import NIOConcurrencyHelpers

/// Which log lines that others can cause at will get written: at most `perSource` a minute from
/// one source (an address, a peer), and at most `perMinute` a minute in all, whatever the number
/// of sources (a flood from many addresses, a member reconnecting in a loop). The last line that
/// fits in all says so (``LineBudget``). Memory is bounded: at most ``capacity`` sources are
/// remembered; past it a new source's lines count only against the budget in all.
final class LogGate: Sendable {
    let perSource: Int
    let all: LineBudget
    static let capacity = 4096
    private let sources = NIOLockedValueBox<[String: (minute: UInt64, used: Int)]>([:])

    init(perSource: Int, perMinute: Int) {
        self.perSource = perSource
        all = LineBudget(perMinute: perMinute)
    }

    func take(source: String, now: UInt64 = WallClock.milliseconds) -> LineBudget.Verdict {
        let minute = now / 60_000
        let allowed = sources.withLockedValue { sources -> Bool in
            if var entry = sources[source], entry.minute == minute {
                entry.used += 1
                sources[source] = entry
                return entry.used <= perSource
            }
            if sources[source] == nil, sources.count >= Self.capacity {
                sources = sources.filter { $0.value.minute == minute }
                if sources.count >= Self.capacity { return true }
            }
            sources[source] = (minute, 1)
            return true
        }
        return allowed ? all.take(now: now) : .drop
    }
}
