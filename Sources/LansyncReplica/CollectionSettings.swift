public import LansyncCore

/// The cluster's collection settings as this replica holds them (meta `trash_window`,
/// `away_after`), in milliseconds.
public struct CollectionSettings: Sendable, Equatable {
    /// How long a deleted item stays restorable (default 30 days).
    public var trashWindow: UInt64
    /// How long a member may stay silent before it is marked away (default 90 days).
    public var awayAfter: UInt64

    public static let day: UInt64 = 86_400_000
    public static let standard = CollectionSettings(trashWindow: 30 * day, awayAfter: 90 * day)
    /// Collection waits this long past the trash window, so that a machine whose clock runs up to
    /// a day behind (the hybrid clock's own bound) refuses a restore before anyone collects.
    public static let clockMargin = HybridLogicalClock.maxForwardDrift

    /// How long after a delete its item may be collected: the trash window, plus the clock
    /// margin or the window again, whichever is shorter (a restore is judged by the restorer's
    /// hybrid clock, which is past the delete's own timestamp once it has seen the delete: a
    /// window of 0 refuses every restore of a delete seen, whatever the clocks).
    public var collectAfter: UInt64 { Self.withMargin(trashWindow) }

    /// How long after its collection a minimal tombstone is purged: the away window, plus the
    /// clock margin or the window again, whichever is shorter (a replica put back from a copy
    /// judges the copy's age by its own clock, which may run behind the collector's).
    public var purgeAfter: UInt64 { Self.withMargin(awayAfter) }

    /// How long a silent member still holds the stable frontier back: the away window, plus the
    /// clock margin or the window again, whichever is shorter. Every member refuses it once it has
    /// been silent for the away window by that member's own clock; one whose clock runs behind
    /// the collector's (within the margin) would otherwise still merge with it after the
    /// collector stopped waiting, and let in a write made without the collected delete. This
    /// covers clocks, not gossip: a member that met the silent one after it last reported to
    /// the collector still judges by that later meeting (Docs/MERGE.md, "What stays open").
    public var holdsBackFor: UInt64 { Self.withMargin(awayAfter) }

    /// `window` and the clock margin after it, or the window again if that is shorter.
    static func withMargin(_ window: UInt64) -> UInt64 { window &+ min(clockMargin, window) }

    public init(trashWindow: UInt64, awayAfter: UInt64) {
        self.trashWindow = trashWindow
        self.awayAfter = awayAfter
    }
}

/// What one collection round did (``ReplicaStore/collect(now:)``).
public struct CollectionRound: Sendable, Equatable {
    /// Items reduced to their minimal tombstone.
    public var collected = 0
    /// Whether the stable frontier moved.
    public var frontierMoved = false
    /// Minimal tombstones purged: collected longer ago than the away window.
    public var purged = 0
    /// Pages handed back to the file system.
    public var pagesFreed = 0

    public init() {}
}

/// How much of a replica is the past, for `status` (``ReplicaStore/collectionFigures(now:)``).
public struct CollectionFigures: Sendable, Equatable {
    /// Field rows of live items.
    public var liveFields = 0
    /// Deleted items not collected yet, and their field rows: what collection may take once the
    /// trash window has passed and every active member has seen the deletes.
    public var collectableItems = 0
    public var collectableFields = 0
    /// Items reduced to their minimal tombstone.
    public var collectedItems = 0
    /// Minimal tombstones purged since the replica began (an away window after collection).
    public var purgedItems = 0
    /// The replica file's size, and how much of it is free pages.
    public var fileBytes = 0
    public var freeBytes = 0
    /// When the stable frontier last moved (Unix ms), nil if it never has.
    public var frontierAt: UInt64?
    /// The active member furthest behind the others, which holds the frontier back; nil when
    /// none is behind.
    public var heldBackBy: NodeID?
    /// Members forgotten, or silent past the away window and the clock margin
    /// (``CollectionSettings/holdsBackFor``): they hold nothing back.
    public var departed: [NodeID] = []
    /// When this replica last rejoined from a snapshot (Unix ms), nil if never.
    public var rejoinedAt: UInt64?
    /// Since when this replica is away itself (``ReplicaStore/awaySince(now:)``) or older than the
    /// away window (``ReplicaStore/staleSince(now:)``), nil if neither.
    public var awaySince: UInt64?
    /// Since when this replica, put back from a copy older than the away window, waits to rejoin
    /// from a current member (``ReplicaStore/staleSince(now:)``), nil if it does not.
    public var staleSince: UInt64?

    public init() {}
}
