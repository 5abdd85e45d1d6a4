import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Refusing a revoked node's writes (``RevokedWriters``): a field that shows one is overruled by
// this replica, with a write of its own that has seen it and keeps the value the field had
// without it, the way the relay overrules a change over its limits. The overrule travels like
// any edit, so the refused write stops showing everywhere it reaches, even on replicas that took
// it in before they held the revocation, and `history` and `status` show it as rejected.

extension Transaction {
    /// What overruling a field's refused writes did.
    enum RevokedOutcome {
        case none
        /// Overruled; the refused versions, for history.
        case overruled([FieldVersion])
        /// The field is `_type` and only refused writes gave it a value: a revoked node created
        /// the item after its cut. `_type` stays (an item's type is what the item is); the
        /// caller deletes the item instead (``deleteItems(createdByRevoked:revoked:writer:lease:name:wallMilliseconds:)``).
        case createdByRevoked
    }

    /// Overrules, in `merged`, the live writes `revoked` refuses: a new write of this replica's
    /// (claimed in `writer`) keeps the field's value without them (``PeerOverrule/keptValue(without:merged:old:revoked:history:)``)
    /// and names them as rejected.
    mutating func overruleRevoked(
        _ merged: inout FieldState,
        old: FieldState?,
        field: FieldName,
        fieldRow: Int64?,
        revoked: RevokedWriters,
        writer: inout ClaimedWriter?,
        lease: WriterLease,
        name: String,
        wallMilliseconds: UInt64
    ) throws -> RevokedOutcome {
        let refused: Set<Dot>
        let reason: String
        switch PeerOverrule.judge(merged, field: field, revoked: revoked) {
        case .stands: return .none
        case .createdByRevoked: return .createdByRevoked
        case .overrule(let dots, let why): (refused, reason) = (dots, why)
        }
        let kept = try PeerOverrule.keptValue(without: refused, merged: merged, old: old, revoked: revoked) {
            guard let fieldRow else { return [] }
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT n.node_id, h.counter, h.write FROM history h JOIN node n ON n.id = h.node
                    WHERE h.field = ? ORDER BY h.seq DESC
                    """,
                arguments: [fieldRow]
            ).compactMap { row in
                NodeID(text: row[0]).map {
                    (Dot(node: $0, counter: UInt64(clamping: row[1] as Int64)), row[2] as String)
                }
            }
        }
        let refusedVersions = merged.versions.filter { refused.contains($0.dot) }
        merged.overrule(
            rejecting: Array(refused),
            keeping: kept,
            reason: reason,
            dot: try nextDot(&writer, lease: lease, name: name),
            timestamp: clock.tick(wallMilliseconds: wallMilliseconds)
        )
        return .overruled(refusedVersions)
    }

    /// Deletes the items a revoked node created after its cut (their `_type` is its write), unless
    /// already deleted: their fields are overruled one by one, and the item goes to the bin, where
    /// `get` and `history` still show it.
    mutating func deleteItems(
        createdByRevoked items: [(row: Int64, id: ItemID)],
        revoked: RevokedWriters,
        writer: inout ClaimedWriter?,
        lease: WriterLease,
        name: String,
        wallMilliseconds: UInt64
    ) throws -> Int {
        var deleted = 0
        for (row, id) in items {
            let old = try loadField(item: row, name: .deleted)
            guard !PeerOverrule.deletionStands(old?.state, revoked: revoked) else { continue }
            var state = old?.state ?? FieldState()
            state.assign(
                .bool(true),
                dot: try nextDot(&writer, lease: lease, name: name),
                timestamp: clock.tick(wallMilliseconds: wallMilliseconds)
            )
            _ = try saveField(item: row, itemID: id, name: .deleted, row: old?.row, old: old?.state, new: state)
            var change = DerivedChange()
            change.note(.deleted, old: old?.state, new: state)
            try updateItem(row: row, by: change)
            deleted += 1
        }
        return deleted
    }

    /// The next dot of this transaction's writer, claimed on first use.
    mutating func nextDot(_ writer: inout ClaimedWriter?, lease: WriterLease, name: String) throws -> Dot {
        if writer == nil { writer = try claimWriter(lease: lease, name: name) }
        writer!.counter += 1
        return Dot(node: writer!.id, counter: writer!.counter)
    }
}

extension ReplicaStore {
    /// Overrules every write this replica holds that `revoked` refuses (a node that has just
    /// learned a revocation took in writes of the revoked node that came after its cut), in one
    /// transaction; returns how many fields and items it overruled or deleted.
    ///
    /// Found through the version index: the live versions of the revoked nodes' writers beyond
    /// their cut. (A list element whose own version a later write superseded is found when that
    /// field next merges something.)
    @discardableResult
    public func overruleRevokedWrites(_ revoked: RevokedWriters, wallMilliseconds: UInt64) throws(StoreError) -> Int {
        guard !revoked.isEmpty else { return 0 }
        return try guarded {
            try write { tx, me in
                let fieldRows = try tx.fieldsWithWrites(refusedBy: revoked)
                guard !fieldRows.isEmpty else { return .rollback(0) }
                var writer: Transaction.ClaimedWriter?
                var created: [(row: Int64, id: ItemID)] = []
                var changed = 0
                for fieldRow in fieldRows.sorted() {
                    guard let field = try tx.loadField(row: fieldRow) else { continue }
                    var state = field.state
                    switch try tx.overruleRevoked(
                        &state,
                        old: field.state,
                        field: field.name,
                        fieldRow: fieldRow,
                        revoked: revoked,
                        writer: &writer,
                        lease: lease,
                        name: me.nodeName,
                        wallMilliseconds: wallMilliseconds
                    ) {
                    case .none: continue
                    case .createdByRevoked:
                        created.append((field.item, field.itemID))
                        continue
                    case .overruled: break
                    }
                    try tx.save(state, over: field, row: fieldRow)
                    changed += 1
                }
                changed += try tx.deleteItems(
                    createdByRevoked: created,
                    revoked: revoked,
                    writer: &writer,
                    lease: lease,
                    name: me.nodeName,
                    wallMilliseconds: wallMilliseconds
                )
                guard let writer else { return .rollback(0) }
                try tx.setCounter(of: writer.row, to: writer.counter)
                tx.writerMarker = (writer.id, try tx.countChange())
                try tx.saveClock()
                return .commit(changed)
            }
        }
    }

    /// The writes of revoked nodes this replica refused (overrules it or another member wrote,
    /// for a revocation), newest first.
    public func revokedWriteRejections(limit: Int = StoreDefaults.revokedRejections) throws(StoreError) -> [Rejection] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT item_id, field, counter, reason FROM rejection
                    WHERE (reason LIKE 'written by revoked node %' OR reason LIKE 'written by reader node %') ORDER BY counter DESC LIMIT ?
                    """,
                arguments: [limit]
            ).map {
                Rejection(
                    item: ItemID(unchecked: $0[0] as String),
                    field: FieldName(unchecked: $0[1] as String),
                    counter: UInt64(clamping: $0[2] as Int64),
                    reason: $0[3] as String
                )
            }
        }
    }
}

extension Transaction {
    /// The rows of the fields holding a version that `revoked` refuses, found through the version
    /// index: the versions of the revoked nodes' writers beyond their cut.
    func fieldsWithWrites(refusedBy revoked: RevokedWriters) throws -> Set<Int64> {
        var fieldRows = Set<Int64>()
        for row in try Row.fetchAll(db, sql: "SELECT id, node_id FROM node") {
            guard let writer = NodeID(text: row[1]), revoked.names(writer) else { continue }
            for version in try Row.fetchAll(
                db,
                sql: "SELECT counter, field FROM version WHERE node = ?",
                arguments: [row[0] as Int64]
            ) where revoked.refusal(of: Dot(node: writer, counter: UInt64(clamping: version[0] as Int64))) != nil {
                fieldRows.insert(version[1])
            }
        }
        return fieldRows
    }

    /// A field found by its row: its item (row and id), name and state; nil if it is gone.
    mutating func loadField(
        row fieldRow: Int64
    ) throws -> (item: Int64, itemID: ItemID, name: FieldName, state: FieldState)? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT f.item, f.name, i.item_id FROM field f JOIN item i ON i.id = f.item WHERE f.id = ?",
                arguments: [fieldRow]
            )
        else { return nil }
        let itemRow: Int64 = row[0]
        let name = FieldName(unchecked: row[1] as String)
        guard let loaded = try loadField(item: itemRow, name: name) else { return nil }
        return (itemRow, ItemID(unchecked: row[2] as String), name, loaded.state)
    }

    /// Saves `state` over the field `old` (loaded with ``loadField(row:)``), and its item's derived
    /// columns with it.
    mutating func save(
        _ state: FieldState,
        over old: (item: Int64, itemID: ItemID, name: FieldName, state: FieldState),
        row: Int64
    ) throws {
        _ = try saveField(item: old.item, itemID: old.itemID, name: old.name, row: row, old: old.state, new: state)
        var change = DerivedChange()
        change.note(old.name, old: old.state, new: state)
        try updateItem(row: old.item, by: change)
    }
}
