public import LansyncReplica

/// What a session moved each way: field states, and bytes on the wire (TLS included).
///
/// One value for every place that speaks of it: the ``SessionMachine`` counts the field states,
/// the ``SessionRunner`` adds the connection's bytes, and the same value travels in the
/// session's progress and outcome, into the ``PeerRegistry`` and out in ``NodeStatus``. Within a
/// session every counter only grows.
public struct SessionCounters: Sendable, Equatable {
    public var sentUpdates = 0
    public var receivedUpdates = 0
    public var sentBytes = 0
    public var receivedBytes = 0

    public init(sentUpdates: Int = 0, receivedUpdates: Int = 0, sentBytes: Int = 0, receivedBytes: Int = 0) {
        self.sentUpdates = sentUpdates
        self.receivedUpdates = receivedUpdates
        self.sentBytes = sentBytes
        self.receivedBytes = receivedBytes
    }

    /// What grew since `earlier`, each counter at least zero.
    public func since(_ earlier: SessionCounters) -> SessionCounters {
        SessionCounters(
            sentUpdates: max(0, sentUpdates - earlier.sentUpdates),
            receivedUpdates: max(0, receivedUpdates - earlier.receivedUpdates),
            sentBytes: max(0, sentBytes - earlier.sentBytes),
            receivedBytes: max(0, receivedBytes - earlier.receivedBytes)
        )
    }

    /// Each counter the larger of this one's and `other`'s.
    public func atLeast(_ other: SessionCounters) -> SessionCounters {
        SessionCounters(
            sentUpdates: max(sentUpdates, other.sentUpdates),
            receivedUpdates: max(receivedUpdates, other.receivedUpdates),
            sentBytes: max(sentBytes, other.sentBytes),
            receivedBytes: max(receivedBytes, other.receivedBytes)
        )
    }
}

/// What a peer's batches carried of signed writes (Docs/SECURITY.md, "Signed writes"): field
/// versions a proof that held covers, versions no proof covers, and the proofs that did not hold
/// (the first one's reason kept, for the log and `status`).
public struct SignedWriteCounts: Sendable, Equatable {
    public var signed = 0
    public var unsigned = 0
    public var failedRuns = 0
    public var firstFailure: String?
    /// Writes refused for want of their member's signature, where signatures are required
    /// (overruled: ``LansyncCore/SignatureRequirement``).
    public var refused = 0

    public init() {}

    /// Adds what one batch's check found.
    public mutating func add(_ outcome: RunCheck.Outcome) {
        signed += outcome.signed
        unsigned += outcome.unsigned
        failedRuns += outcome.failed.count
        if firstFailure == nil, let failure = outcome.failed.first { firstFailure = failure.description }
    }
}
