import GRDB
import LansyncCore
package import LansyncReplica

// A collection round's steps in SQLite (the round itself: CollectionRoundSteps, in the seam).
extension ReplicaStore: CollectionRoundSteps {
    package func advanceLedger(now: UInt64, _ observe: LedgerObserver) throws(StoreError) -> CollectionObservation {
        try guarded {
            try write { tx, _ in
                let settings = try Self.collectionSettings(db: tx.db)
                var seen = CollectionObservation(
                    settings: settings,
                    reports: try Self.memberReports(db: tx.db),
                    selfAway: try Self.judgesNoOneAway(db: tx.db, now: now, settings: settings),
                    own: try Self.versionVector(db: tx.db),
                    ledger: try Self.ledger(db: tx.db)
                )
                observe(&seen)
                try tx.setMeta("stability", bytes: StabilityLedgerCoding.encode(seen.ledger))
                return .commit(seen)
            }
        }
    }

    package func collectDeleted(_ batch: CollectionBatch) throws(StoreError) -> CollectionBatch.Outcome {
        try guarded {
            try write(.full, foreignKeyChecks: false) { tx, _ in
                let rows = try Row.fetchAll(
                    tx.db,
                    sql:
                        "SELECT id, item_id FROM item WHERE deleted = 1 AND collected = 0 AND id > ? ORDER BY id LIMIT ?",
                    arguments: [batch.after, batch.limit]
                )
                var count = 0
                for row in rows {
                    let item = try tx.loadItem(ItemID(unchecked: row[1]))
                    guard item.state.isCollectable(below: batch.stable, deletedBefore: batch.cutoff) else { continue }
                    try tx.collect(item, at: batch.now)
                    count += 1
                }
                // What the replica holds changed: caches keyed on the change count (a running
                // node's digest) must read it again.
                if count > 0 { _ = try tx.countChange() }
                return .commit(.init(looked: rows.count, last: rows.last?[0] as Int64?, collected: count))
            }
        }
    }

    package func judgesNoOneAway(now: UInt64, settings: CollectionSettings) throws(StoreError) -> Bool {
        try read { db in try Self.judgesNoOneAway(db: db, now: now, settings: settings) }
    }

    package func purgeTombstones(collectedBefore cutoff: UInt64, limit: Int) throws(StoreError) -> Int {
        try guarded {
            try write(.full, foreignKeyChecks: false) { tx, _ in
                let batch = try String.fetchAll(
                    tx.db,
                    sql:
                        "SELECT item_id FROM item WHERE deleted = 1 AND collected <> 0 AND collected < ? ORDER BY collected LIMIT ?",
                    arguments: [Int64(clamping: cutoff), limit]
                )
                for id in batch { try tx.purge(tx.loadItem(ItemID(unchecked: id))) }
                guard !batch.isEmpty else { return .rollback(0) }
                try tx.db.execute(
                    sql: """
                        INSERT INTO meta(key, value) VALUES ('purged_items', ?)
                        ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)
                        """,
                    arguments: [String(batch.count)]
                )
                _ = try tx.countChange()
                return .commit(batch.count)
            }
        }
    }

    /// FTS5 keeps a deleted row's trigrams as delete markers until its segments merge: merged
    /// now, the search index is what a joiner's would be.
    package func tidyAfterPurging() throws(StoreError) {
        try guarded {
            try database.write { db in try db.execute(sql: "INSERT INTO item_search(item_search) VALUES ('optimize')") }
        }
    }
}
