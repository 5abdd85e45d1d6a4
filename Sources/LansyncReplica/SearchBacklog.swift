import LansyncCore

/// How far the search texts are behind the replica: the change-feed number `item_search`
/// reflects, and the latest the feed gave.
public struct SearchBacklog: Sendable, Equatable {
    public var indexed: Int64
    public var latest: Int64
    /// True when every change is in the search texts.
    public var isEmpty: Bool { indexed >= latest }

    public init(indexed: Int64, latest: Int64) {
        self.indexed = indexed
        self.latest = latest
    }
}
