import CoreMetrics
import NIOConcurrencyHelpers

/// The node's counters, through swift-metrics: the process that runs the node chooses the
/// backend (`lansync node` bootstraps Prometheus and serves `/metrics`; without a bootstrap they
/// cost nothing). Gauges that are a reading of the replica or the peer table (open conflicts,
/// what each peer lacks) are not kept here: whoever serves the metrics reads them from
/// ``Node/status()`` when asked. Docs/OPERATIONS.md lists every metric.
struct NodeMetrics: Sendable {
    let sessionsStarted = Counter(label: "lansync_sessions_started_total")
    let sessionsEnded = Counter(label: "lansync_sessions_ended_total", dimensions: [("result", "clean")])
    let sessionsFailed = Counter(label: "lansync_sessions_ended_total", dimensions: [("result", "error")])
    let sessionsActive = Meter(label: "lansync_sessions_active")
    let sentBytes = Counter(label: "lansync_sent_bytes_total")
    let receivedBytes = Counter(label: "lansync_received_bytes_total")
    let sentStates = Counter(label: "lansync_field_states_sent_total")
    let receivedStates = Counter(label: "lansync_field_states_received_total")
    let appliedStates = Counter(label: "lansync_field_states_applied_total")
    let merges = Counter(label: "lansync_merges_total")

    /// A connection refused before any session, by reason (`wrong-cluster`, `revoked`, `busy`,
    /// `handshake`).
    func refused(_ reason: String) {
        Counter(label: "lansync_connections_refused_total", dimensions: [("reason", reason)]).increment()
    }

    /// A discovery event: `found`, `lost`, `available`, `unavailable`.
    func discovery(_ event: String) {
        Counter(label: "lansync_discovery_events_total", dimensions: [("event", event)]).increment()
    }

    /// Adds what a session did since its last report to the totals.
    func count(_ tally: SessionTally, _ now: SessionCounters) {
        let delta = tally.advance(to: now)
        if delta.sentBytes > 0 { sentBytes.increment(by: delta.sentBytes) }
        if delta.receivedBytes > 0 { receivedBytes.increment(by: delta.receivedBytes) }
        if delta.sentUpdates > 0 { sentStates.increment(by: delta.sentUpdates) }
        if delta.receivedUpdates > 0 { receivedStates.increment(by: delta.receivedUpdates) }
    }
}

/// One session's counters as last added to the totals, so that each report adds only its
/// difference (counters only grow within a session).
final class SessionTally: Sendable {
    private let last = NIOLockedValueBox(SessionCounters())

    func advance(to now: SessionCounters) -> SessionCounters {
        last.withLockedValue { last in
            defer { last = last.atLeast(now) }
            return now.since(last)
        }
    }
}
