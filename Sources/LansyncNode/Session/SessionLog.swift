import CoreMetrics
import Foundation
import LansyncCore
import LansyncReplica
import LansyncWire
import Logging

/// What one session says to the node's log and adds to its metrics: its start, its counters as
/// they grow, and its end. Lines a member's sessions cause go through the node's ``LogGate``, so
/// a member reconnecting in a loop cannot fill the log; the metrics count every session.
struct SessionLog: Sendable {
    let logger: Logger
    let metrics: NodeMetrics
    let lines: LogGate
    /// The peer's node id, as its certificate proves it.
    let peerID: NodeID
    let address: String
    /// True if this node dialled the connection.
    let outbound: Bool
    /// What the session has added to the metrics so far.
    let tally = SessionTally()
    let started = ContinuousClock.now

    /// The peer said hello and the registry took the session.
    func began(with hello: Hello) {
        metrics.sessionsStarted.increment()
        metrics.sessionsActive.increment()
        let path = hello.role == .relay ? "relay" : "direct"
        let budget = lines.take(source: peerID.text)
        guard budget != .drop else { return }
        logger.info(
            "session with \(name(hello)) (\(peerID.short)) started: \(path), \(outbound ? "dialled" : "accepted from") \(address)\(budget.note)",
            metadata: [
                "event": "session-start", "peer": "\(hello.name)", "node": "\(peerID.text)", "path": "\(path)",
                "address": "\(address)", "direction": "\(outbound ? "outbound" : "inbound")",
            ]
        )
    }

    /// The session's counters grew.
    func moved(_ counters: SessionCounters) { metrics.count(tally, counters) }

    /// A batch from the peer changed `changed` field states.
    func applied(_ changed: Int) {
        metrics.merges.increment()
        metrics.appliedStates.increment(by: changed)
    }

    /// The session ended with `outcome`; `failure` is why (nil for a clean end). `kept` is false
    /// when the registry kept another connection to the peer (both sides dialled at once), and
    /// `registered` whether the registry had taken this session at all.
    func ended(_ outcome: SessionOutcome, failure: String?, kept: Bool, registered: Bool) {
        moved(outcome.counters)
        guard let peer = outcome.peer, registered else {
            if kept, let failure, lines.take(source: peerID.text) != .drop {
                logger.warning(
                    "connection with \(address) (\(peerID.short)) ended before a session: \(failure)",
                    metadata: [
                        "event": "session-end", "node": "\(peerID.text)", "address": "\(address)",
                        "error": "\(failure)",
                    ]
                )
            }
            return
        }
        metrics.sessionsActive.decrement()
        // A replaced connection ended cleanly: the other one carries on.
        (failure == nil || !kept ? metrics.sessionsEnded : metrics.sessionsFailed).increment()
        let budget = lines.take(source: peerID.text)
        guard budget != .drop else { return }
        guard kept else {
            logger.info(
                "session with \(name(peer)) (\(peerID.short)) ended: replaced by the other connection to it (both sides dialled at once)\(budget.note)",
                metadata: [
                    "event": "session-end", "peer": "\(peer.name)", "node": "\(peerID.text)", "replaced": "true",
                ]
            )
            return
        }
        logEnd(outcome, peer: peer, failure: failure, note: budget.note)
    }

    private func logEnd(_ outcome: SessionOutcome, peer: Hello, failure: String?, note: String) {
        let seconds = (ContinuousClock.now - started) / .milliseconds(1) / 1000
        let c = outcome.counters
        let leftOut =
            outcome.unverifiedCovers > 0
            ? "; left out \(outcome.unverifiedCovers) writer(s) its batches claimed that no state named" : ""
        let signed = outcome.signedWrites
        let refused =
            signed.failedRuns > 0
            ? "; \(signed.failedRuns) signed run(s) of its batches did not hold (\(signed.firstFailure ?? ""))" : ""
        let unsigned =
            signed.refused > 0
            ? "; refused \(signed.refused) write(s) without their member's signature (signed writes are required)" : ""
        logger.info(
            "session with \(name(peer)) (\(peerID.short)) ended after \(String(format: "%.1f", seconds)) s: sent \(c.sentUpdates) field states (\(c.sentBytes) bytes), received \(c.receivedUpdates) (\(c.receivedBytes) bytes)\(leftOut)\(refused)\(unsigned)\(failure.map { "; \($0)" } ?? "")\(note)",
            metadata: [
                "event": "session-end", "peer": "\(peer.name)", "node": "\(peerID.text)",
                "path": "\(peer.role == .relay ? "relay" : "direct")", "address": "\(address)",
                "sent": "\(c.sentUpdates)", "received": "\(c.receivedUpdates)", "sent_bytes": "\(c.sentBytes)",
                "received_bytes": "\(c.receivedBytes)", "duration_s": "\(String(format: "%.3f", seconds))",
                "error": "\(failure ?? "")", "signed": "\(signed.signed)", "unsigned": "\(signed.unsigned)",
                "failed_runs": "\(signed.failedRuns)", "refused_unsigned": "\(signed.refused)",
            ]
        )
    }

    private func name(_ hello: Hello) -> String { hello.name.isEmpty ? peerID.short : hello.name }
}
