import Foundation
import LansyncReplica
import NIOConcurrencyHelpers

/// The connections this node refused for their certificate (a node of another cluster, or one
/// that refused this node's), by address and reason: what `status` lists under "refused", and
/// what decides when such a refusal is logged.
///
/// Bounded: it keeps the 16 most recent (address, reason) pairs, and logs a pair when it is new or
/// was last logged a minute ago or more, so a peer retrying every few seconds, or a flood of
/// strangers, cannot fill the log or memory.
final class RefusedConnections: Sendable {
    struct Entry: Sendable {
        var address: String
        var reason: String
        var count: Int
        var last: UInt64
        var logged: UInt64
    }

    static let capacity = 16
    static let logInterval: UInt64 = 60_000
    private let entries = NIOLockedValueBox<[Entry]>([])

    /// Records a refusal; returns true if it should be logged now.
    func note(address: String, reason: String, now: UInt64 = WallClock.milliseconds) -> Bool {
        entries.withLockedValue { entries in
            if let i = entries.firstIndex(where: { $0.address == address && $0.reason == reason }) {
                var entry = entries.remove(at: i)
                entry.count += 1
                entry.last = now
                let due = now >= entry.logged + Self.logInterval
                if due { entry.logged = now }
                entries.append(entry)
                return due
            }
            entries.append(Entry(address: address, reason: reason, count: 1, last: now, logged: now))
            if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
            return true
        }
    }

    /// Newest first, as `status` shows them.
    var snapshot: [NodeStatus.Refusal] {
        entries.withLockedValue { entries in
            entries.reversed().map {
                NodeStatus.Refusal(
                    address: $0.address,
                    reason: $0.reason,
                    count: $0.count,
                    last: WallClock.iso8601(milliseconds: $0.last)
                )
            }
        }
    }
}
