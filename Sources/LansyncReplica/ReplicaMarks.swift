import LansyncCore

/// Where a replica stood when it was read: enough for a reader that keeps something derived from
/// every item (a digest) to tell whether reading the items changed since `latestSeq` brings it up
/// to date, or whether items went without a trace in the feed (`items` fell, `floor` moved).
public struct ReplicaMarks: Sendable, Equatable {
    /// The count of transactions that changed a field (meta `changes`).
    public var stamp: UInt64
    /// The change feed's latest number.
    public var latestSeq: Int64
    /// The highest feed number a collection, purge or rejoin removed.
    public var floor: Int64
    /// How many items (deleted ones too) the replica holds.
    public var items: Int

    public init(stamp: UInt64, latestSeq: Int64, floor: Int64, items: Int) {
        self.stamp = stamp
        self.latestSeq = latestSeq
        self.floor = floor
        self.items = items
    }
}
