import LansyncCore
import Synchronization

/// When each member's edits were made, and when every other member first held them: the run's
/// end-to-end figures (a change committed in one member's replica to the same change in another's,
/// through the relay).
///
/// A member that holds edit number `k` of member `i` holds every earlier one of `i` too (a later
/// edit of the same field supersedes them, and the relay may carry only the last): each of them
/// counts as delivered when `k` arrives.
final class Deliveries: Sendable {
    private struct State {
        /// Per member, when its edit number `k` (1-based) was made.
        var made: [[ContinuousClock.Instant]]
        /// `seen[j * members + i]`: the highest edit number of member `i` member `j` holds.
        var seen: [Int32]
        /// Per member and edit number, how many other members hold it.
        var reached: [[Int32]]
        /// A change to one other member, in microseconds (``Histogram``).
        var oneMember = Histogram()
        /// A change to every other member, in microseconds.
        var everyMember = Histogram()
        var delivered = 0
    }

    let members: Int
    /// Deliveries slower than this are printed one per line (`--report-slower`).
    let reportSlower: Duration?
    private let started = ContinuousClock.now
    private let state: Mutex<State>

    init(members: Int, reportSlower: Duration? = nil) {
        self.reportSlower = reportSlower
        self.members = members
        state = Mutex(
            State(
                made: Array(repeating: [], count: members),
                seen: Array(repeating: 0, count: members * members),
                reached: Array(repeating: [], count: members)
            )
        )
    }

    /// Member `member` made its edit number `number` (1, 2, …) now.
    func edited(member: Int, number: Int) {
        let now = ContinuousClock.now
        state.withLock { state in
            precondition(state.made[member].count == number - 1, "edits are numbered in order")
            state.made[member].append(now)
            state.reached[member].append(0)
        }
    }

    /// Member `receiver` merged `batch` into `replica`: the edits of other members it now holds
    /// for the first time are delivered.
    func received(_ batch: DeltaBatch, by receiver: Int, in replica: Replica) {
        var held: [(member: Int, number: Int)] = []
        for update in batch.updates where update.key.field.rawValue == "n" {
            let text = update.key.item.rawValue
            guard text.hasPrefix("m"), let member = Int(text.dropFirst()), member < members, member != receiver,
                case .integer(let number)? = replica.items[update.key.item]?.fields[update.key.field]?.shownValue
            else { continue }
            held.append((member, Int(number)))
        }
        guard !held.isEmpty else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            for (member, number) in held {
                let slot = receiver * members + member
                let from = Int(state.seen[slot]) + 1
                guard number >= from, number <= state.made[member].count else { continue }
                state.seen[slot] = Int32(number)
                for k in from...number {
                    let took = now - state.made[member][k - 1]
                    if let slower = reportSlower, took > slower {
                        let made = state.made[member][k - 1] - started
                        print(
                            "slow: member \(member)'s edit \(k) reached member \(receiver) after \(took) (made at \(made))"
                        )
                    }
                    state.oneMember.record(took)
                    state.delivered += 1
                    state.reached[member][k - 1] += 1
                    if state.reached[member][k - 1] == Int32(members - 1) { state.everyMember.record(took) }
                }
            }
        }
    }

    /// The figures so far.
    var summary: Summary {
        state.withLock { state in
            let changes = state.made.reduce(0) { $0 + $1.count }
            return Summary(
                changes: changes,
                expected: changes * (members - 1),
                delivered: state.delivered,
                oneMember: state.oneMember,
                everyMember: state.everyMember
            )
        }
    }

    struct Summary {
        var changes: Int
        /// Deliveries a complete run makes: every change to every other member.
        var expected: Int
        var delivered: Int
        var oneMember: Histogram
        var everyMember: Histogram
    }
}

/// Durations in 10 µs buckets up to 30 s (longer ones in the last): exact enough for p50 and p99,
/// in constant memory whatever the run's length.
struct Histogram: Sendable {
    static let bucket: Int64 = 10_000  // ns
    static let buckets = 3_000_000
    private var counts: [UInt32] = []
    private(set) var count = 0
    private(set) var max: Duration = .zero

    mutating func record(_ d: Duration) {
        if counts.isEmpty { counts = Array(repeating: 0, count: Self.buckets) }
        let ns = d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
        counts[Swift.min(Int(Swift.max(ns, 0) / Self.bucket), Self.buckets - 1)] += 1
        count += 1
        max = Swift.max(max, d)
    }

    /// The `q` quantile (0…1) in milliseconds, nil if empty.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = Swift.max(1, Int((q * Double(count)).rounded(.up)))
        var seen = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += Int(c)
            if seen >= rank { return Double(Int64(i + 1) * Self.bucket) / 1e6 }
        }
        return nil
    }
}
