import Foundation
import LansyncCore
package import LansyncReplica
import PostgresNIO

// A collection round's steps in PostgreSQL (the round itself: CollectionRoundSteps, in the seam).
extension PostgresReplica: CollectionRoundSteps {
    package func advanceLedger(now: UInt64, _ observe: LedgerObserver) throws(StoreError) -> CollectionObservation {
        try guarded {
            try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .local)
                let settings = try Self.collectionSettings(db)
                var seen = CollectionObservation(
                    settings: settings,
                    reports: try Self.memberReports(db),
                    selfAway: try Self.judgesNoOneAway(db, now: now, settings: settings),
                    own: try Self.versionVector(db),
                    ledger: try Self.ledger(db)
                )
                observe(&seen)
                try Self.setMeta("stability", Data(StabilityLedgerCoding.encode(seen.ledger)).base64EncodedString(), db)
                return seen
            }
        }
    }

    package func collectDeleted(_ batch: CollectionBatch) throws(StoreError) -> CollectionBatch.Outcome {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .local)
                let rows = try db.run(
                    """
                    SELECT id, item_id FROM item WHERE deleted AND collected = 0 AND id > \(batch.after)
                    ORDER BY id LIMIT \(batch.limit)
                    """
                ).map { try $0.decode((Int64, String).self) }
                var count = 0
                for (_, id) in rows {
                    let item = try tx.loadItem(ItemID(unchecked: id))
                    guard item.state.isCollectable(below: batch.stable, deletedBefore: batch.cutoff) else { continue }
                    try tx.collect(item, at: batch.now)
                    count += 1
                }
                if count > 0 { tx.noteChange() }
                try tx.finish()
                return CollectionBatch.Outcome(looked: rows.count, last: rows.last?.0, collected: count)
            }
        }
    }

    package func judgesNoOneAway(now: UInt64, settings: CollectionSettings) throws(StoreError) -> Bool {
        try guarded { try database.statements { db in try Self.judgesNoOneAway(db, now: now, settings: settings) } }
    }

    package func purgeTombstones(collectedBefore cutoff: UInt64, limit: Int) throws(StoreError) -> Int {
        try guarded {
            try database.transaction(write: true) { db in
                var tx = try PostgresWrite(db, origin: .local)
                let batch = try db.run(
                    """
                    SELECT item_id FROM item WHERE deleted AND collected <> 0 AND collected < \(bigint: cutoff)
                    ORDER BY collected, id LIMIT \(limit)
                    """
                ).map { try $0.decode(String.self) }
                for id in batch { try tx.purge(tx.loadItem(ItemID(unchecked: id))) }
                guard !batch.isEmpty else { return 0 }
                try db.run(
                    """
                    INSERT INTO meta (key, value) VALUES ('purged_items', \(String(batch.count)))
                    ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + excluded.value::bigint)::text
                    """
                )
                tx.noteChange()
                try tx.finish()
                return batch.count
            }
        }
    }

    /// Nothing: PostgreSQL keeps no search index of the items.
    package func tidyAfterPurging() throws(StoreError) {}

    /// None counted: PostgreSQL's vacuum hands space back on its own.
    package func returnFreePages() throws(StoreError) -> Int { 0 }
}
