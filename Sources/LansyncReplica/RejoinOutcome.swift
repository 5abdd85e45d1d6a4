import LansyncCore

/// What a rejoin kept aside (``ReplicaStore/rejoin(keepingUnseenBy:adopting:now:)``).
public struct RejoinStart: Sendable, Equatable {
    /// Field states holding writes of this replica's own that the peer lacked.
    public var fields = 0
    /// The items they belong to.
    public var items = 0

    public init(fields: Int = 0, items: Int = 0) {
        self.fields = fields
        self.items = items
    }
}

/// What the writes kept aside became (``ReplicaStore/reissueRejoinPending(now:)``).
public struct RejoinOutcome: Sendable, Equatable {
    /// Items whose writes were re-issued under the new writer.
    public var items = 0
    /// The writes re-issued (dots of the new writer).
    public var writes = 0
    /// Items the snapshot holds deleted: the writes kept aside for them were dropped.
    public var dropped = 0

    public init(items: Int = 0, writes: Int = 0, dropped: Int = 0) {
        self.items = items
        self.writes = writes
        self.dropped = dropped
    }
}
