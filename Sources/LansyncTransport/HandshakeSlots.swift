import NIOConcurrencyHelpers
import NIOCore

/// The connections still in their TLS handshake, and the rules that keep strangers from using up
/// what members need (DESIGN invariant 5).
///
/// - Outbound and inbound handshakes have separate budgets: no number of strangers can stop this
///   node from dialling its peers.
/// - Inbound, a source address holds at most ``perSource`` pending handshakes and everyone together
///   at most ``inboundLimit``. A new connection is never turned away for lack of room: it takes the
///   place of the oldest pending connection of the same source (or, when the total is reached, of
///   the source holding the most), preferring connections that have sent nothing at all. A member's
///   handshake takes milliseconds, so it completes before strangers can push it out, while a
///   stranger holding sockets open keeps only a handful of them.
/// - A connection that sends nothing within ``firstByteTimeout`` is closed (``HandshakeWatcher``).
final class HandshakeSlots: Sendable {
    static let perSource = 8
    static let inboundLimit = 64
    static let outboundLimit = 16

    private struct Pending {
        let channel: any Channel
        let source: String
        let counters: WireCounters
        let order: UInt64
    }

    private struct State {
        var inbound: [ObjectIdentifier: Pending] = [:]
        var outbound = 0
        var next: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    /// Admits an outbound handshake; false if this node already has too many of its own pending.
    func admitOutbound() -> Bool {
        state.withLockedValue { state in
            guard state.outbound < Self.outboundLimit else { return false }
            state.outbound += 1
            return true
        }
    }

    func releaseOutbound() {
        state.withLockedValue { $0.outbound -= 1 }
    }

    /// Admits an inbound handshake, closing the connection whose place it takes, if any.
    func admitInbound(_ channel: any Channel, source: String, counters: WireCounters) {
        let evicted: (any Channel)? = state.withLockedValue { state in
            state.next += 1
            let entry = Pending(channel: channel, source: source, counters: counters, order: state.next)
            let sameSource = state.inbound.values.filter { $0.source == source }
            var victim: Pending?
            if sameSource.count >= Self.perSource {
                victim = Self.leastValuable(sameSource)
            } else if state.inbound.count >= Self.inboundLimit {
                let bySource = Dictionary(grouping: state.inbound.values, by: \.source)
                let crowded = bySource.values.max { $0.count < $1.count } ?? []
                victim = Self.leastValuable(crowded)
            }
            if let victim { state.inbound[ObjectIdentifier(victim.channel)] = nil }
            state.inbound[ObjectIdentifier(channel)] = entry
            return victim?.channel
        }
        evicted?.close(promise: nil)
    }

    func releaseInbound(_ channel: any Channel) {
        state.withLockedValue { _ = $0.inbound.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var pendingInbound: Int { state.withLockedValue { $0.inbound.count } }

    /// The connection to give up first: one that has sent nothing, else the oldest.
    private static func leastValuable(_ candidates: [Pending]) -> Pending? {
        candidates.min { lhs, rhs in
            let (l, r) = (lhs.counters.received > 0, rhs.counters.received > 0)
            return l != r ? !l : lhs.order < rhs.order
        }
    }
}
