package import LansyncCore

/// What a collection round reads and writes, each step in a backend's own SQL and transactions;
/// the round itself, the order of its steps and what it decides, is written once
/// (``collectionRound(now:)``: issue 65, the SQLite store and PostgreSQL each had a copy).
package protocol CollectionRoundSteps {
    /// In one write transaction: what the round observes (``CollectionObservation``: the
    /// settings, the reports, the saved stability ledger), the ledger changed by `observe` and
    /// kept; what was observed, with the ledger as kept.
    func advanceLedger(now: UInt64, _ observe: LedgerObserver) throws(StoreError) -> CollectionObservation

    /// In one write transaction: of the deleted items not yet collected, the first `limit` by row
    /// after row `after`, each reduced to its minimal tombstone where it is collectable
    /// (``ItemState/isCollectable(below:deletedBefore:)``) at `now`.
    func collectDeleted(_ batch: CollectionBatch) throws(StoreError) -> CollectionBatch.Outcome

    /// Whether this replica judges no member away: it is away itself, or stale (a copy put back).
    func judgesNoOneAway(now: UInt64, settings: CollectionSettings) throws(StoreError) -> Bool

    /// In one write transaction: forgets up to `limit` of the minimal tombstones collected
    /// before `cutoff`, oldest first, and counts them as purged; how many.
    func purgeTombstones(collectedBefore cutoff: UInt64, limit: Int) throws(StoreError) -> Int

    /// After a round that purged tombstones: what the backend tidies then (SQLite merges the
    /// search index's segments, so that it is what a joiner's would be).
    func tidyAfterPurging() throws(StoreError)

    /// Hands free space back to the file system; how many pages (0 where the database does it
    /// on its own).
    func returnFreePages() throws(StoreError) -> Int
}

/// Takes what a collection round observes into its stability ledger, inside the backend's
/// transaction.
package typealias LedgerObserver = (inout CollectionObservation) -> Void

/// One transaction's worth of a collection round: which deleted items it looks at (the first
/// `limit` by row after row `after`), and what it judges them against.
package struct CollectionBatch {
    package var after: Int64
    package var limit: Int
    package var stable: VersionVector
    /// Items deleted before this wall-clock time may be collected (the trash window's end).
    package var cutoff: UInt64
    package var now: UInt64

    /// What one batch did: how many rows it looked at, the last one's row, how many it collected.
    package struct Outcome {
        package var looked: Int
        package var last: Int64?
        package var collected: Int

        package init(looked: Int, last: Int64?, collected: Int) {
            self.looked = looked
            self.last = last
            self.collected = collected
        }
    }
}

/// What a collection round observes in its first transaction: the settings, the members'
/// reports, whether the replica judges no one away, its own version vector, and the stability
/// ledger as saved (which the round changes and the backend keeps).
package struct CollectionObservation {
    package var settings: CollectionSettings
    package var reports: [MemberReport]
    package var selfAway: Bool
    package var own: VersionVector
    package var ledger: StabilityLedger

    package init(
        settings: CollectionSettings,
        reports: [MemberReport],
        selfAway: Bool,
        own: VersionVector,
        ledger: StabilityLedger
    ) {
        self.settings = settings
        self.reports = reports
        self.selfAway = selfAway
        self.own = own
        self.ledger = ledger
    }
}

extension CollectionRoundSteps {
    /// Items looked at per transaction of collection: a large round never holds the write lock
    /// for long.
    package static var collectBatch: Int { 200 }
    /// Tombstones purged per transaction.
    package static var purgeBatch: Int { 500 }

    /// One collection round: the active members' reports (the replica's own vector among them)
    /// taken into the stability ledger; then every collectable deleted item (past the trash
    /// window and the clock margin, below the stable frontier) reduced to its minimal tombstone,
    /// a batch per transaction; then, unless the replica judges no one away, the tombstones
    /// collected longer ago than ``CollectionSettings/purgeAfter`` forgotten; and the freed
    /// space handed back.
    package func collectionRound(now: UInt64) throws(StoreError) -> CollectionRound {
        var round = CollectionRound()
        let seen = try advanceLedger(now: now) { seen in
            let active = MemberReport.active(
                seen.reports,
                now: now,
                awayAfter: seen.settings.holdsBackFor,
                selfAway: seen.selfAway
            )
            round.frontierMoved = seen.ledger.observe(
                [seen.own] + active.map(\.seen),
                reportedAt: active.map(\.at).min().map { min($0, now) } ?? now,
                now: now,
                // No release: no rule tried is safe yet (Docs/MERGE.md, "From frontier to stable").
                release: nil
            )
        }
        let (settings, ledger) = (seen.settings, seen.ledger)
        let stable = ledger.stable
        guard !stable.isEmpty else { return round }
        round.collected = try collectDeleted(
            below: stable,
            deletedBefore: settings.collectCutoff(ledger, now: now),
            now: now
        )
        // A replica away itself or stale purges nothing: it may yet rejoin from a member that
        // never saw a delete it collected (an operator's `backup accept --from`), and re-issues
        // the delete only while it holds the tombstone (a property history: a relay put back
        // from a copy purged its own delete, rejoined from such a member, and the item came back).
        if try !judgesNoOneAway(now: now, settings: settings) {
            round.purged = try purgeTombstones(collectedBefore: now &- min(now, settings.purgeAfter))
        }
        if round.collected > 0 || round.purged > 0 { round.pagesFreed = try returnFreePages() }
        return round
    }

    /// Every collectable deleted item reduced to its minimal tombstone, a batch per transaction;
    /// how many.
    private func collectDeleted(
        below stable: VersionVector,
        deletedBefore cutoff: UInt64,
        now: UInt64
    ) throws(StoreError) -> Int {
        var collected = 0
        var after: Int64 = 0
        while true {
            let batch = try collectDeleted(
                CollectionBatch(after: after, limit: Self.collectBatch, stable: stable, cutoff: cutoff, now: now)
            )
            collected += batch.collected
            after = batch.last ?? after
            if batch.looked < Self.collectBatch { return collected }
        }
    }

    /// Forgets the minimal tombstones collected before `cutoff`, a batch per transaction; how
    /// many. Safe because every member that could still lack such a delete rejoins from a
    /// snapshot instead of merging: an active member saw it before it was collected, a member
    /// away past the window is refused until it rejoins, and a replica restored from a copy older
    /// than the window rejoins on its own (``ReplicaStorage/collectionFigures(now:)``'s
    /// `staleSince`); a copy younger than that was taken after the delete reached it. A write to
    /// a purged item that the replica has seen is ignored if it arrives again.
    package func purgeTombstones(collectedBefore cutoff: UInt64) throws(StoreError) -> Int {
        var purged = 0
        while true {
            let count = try purgeTombstones(collectedBefore: cutoff, limit: Self.purgeBatch)
            purged += count
            if count < Self.purgeBatch {
                if purged > 0 { try tidyAfterPurging() }
                return purged
            }
        }
    }
}
