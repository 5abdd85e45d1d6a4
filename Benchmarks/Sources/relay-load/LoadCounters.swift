import Synchronization

/// What the members' sessions did, counted across all of them.
final class LoadCounters: Sendable {
    struct Values: Sendable {
        var connects = 0
        var connectFailures = 0
        /// Sessions that ended before the run did (the relay closed, refused or lost them).
        var sessionsLost = 0
        /// Of those, sessions lost once the edits had begun.
        var lostWhileEditing = 0
        var connectionErrors = 0
        /// Members whose current session has been up to date with the relay at least once.
        var upToDate = 0
        var mostUpToDate = 0
        var refusedBatches = 0
        var refusedEdits = 0
        /// The first few distinct reasons sessions failed or ended early, for the report.
        var reasons: [String: Int] = [:]
    }

    private let values = Mutex(Values())

    func add(_ key: WritableKeyPath<Values, Int>, _ n: Int = 1) {
        values.withLock {
            $0[keyPath: key] += n
            $0.mostUpToDate = max($0.mostUpToDate, $0.upToDate)
        }
    }

    /// Counts a reason a connection failed or a session ended early (distinct reasons, up to 8).
    func note(_ reason: String) {
        values.withLock { v in
            if v.reasons[reason] != nil || v.reasons.count < 8 { v.reasons[reason, default: 0] += 1 }
        }
    }

    var now: Values { values.withLock { $0 } }
}

/// When members edit: each every `interval`, member `i` first at `start + interval * i / members`
/// (spread evenly), from the moment the run says so (``begin(at:)``) until `editsEnd`; sessions
/// last until `end`, so the last edits have time to reach everyone.
final class EditSchedule: Sendable {
    let members: Int
    let interval: Duration
    private let start = Mutex<ContinuousClock.Instant?>(nil)
    private let ends = Mutex<(edits: ContinuousClock.Instant, all: ContinuousClock.Instant)?>(nil)

    init(members: Int, interval: Duration) {
        self.members = members
        self.interval = interval
    }

    func begin(at start: ContinuousClock.Instant, editsFor duration: Duration, drain: Duration) {
        ends.withLock { $0 = (start + duration, start + duration + drain) }
        self.start.withLock { $0 = start }
    }

    /// Waits until the run has begun; then when member `index` makes its first edit.
    func first(for index: Int) async throws -> ContinuousClock.Instant {
        while true {
            if let start = start.withLock({ $0 }) { return start + interval * (Double(index) / Double(members)) }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Whether the edits have begun.
    var begun: Bool { start.withLock { $0 != nil } }

    /// The last edit's time and the sessions' end; far away until the run has begun.
    var editsEnd: ContinuousClock.Instant { ends.withLock { $0?.edits } ?? .now + .seconds(86_400) }
    var end: ContinuousClock.Instant { ends.withLock { $0?.all } ?? .now + .seconds(86_400) }
}
