import Foundation
import GRDB
public import LansyncCore
import LansyncJSON

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
    /// (claimed in `writer`) keeps the field's value without them (see ``keptValue(without:merged:old:fieldRow:revoked:)``)
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
        let refused = revoked.refusedDots(in: merged)
        guard !refused.isEmpty else { return .none }
        if field == .type {
            return merged.shownValue(without: refused) == nil ? .createdByRevoked : .none
        }
        let kept = try keptValue(without: refused, merged: merged, old: old, fieldRow: fieldRow, revoked: revoked)
        let reasons = Set(refused.compactMap { revoked.refusal(of: $0)?.reason }).sorted()
        let refusedVersions = merged.versions.filter { refused.contains($0.dot) }
        merged.overrule(
            rejecting: Array(refused),
            keeping: kept,
            reason: reasons.joined(separator: "; "),
            dot: try nextDot(&writer, lease: lease, name: name),
            timestamp: clock.tick(wallMilliseconds: wallMilliseconds)
        )
        return .overruled(refusedVersions)
    }

    /// The value a field keeps when its refused writes are overruled: what this replica showed
    /// before, if none of them was in it; else what the field's other live writes show; else the
    /// latest value in its history that no refused write made; else null.
    func keptValue(
        without refused: Set<Dot>,
        merged: FieldState,
        old: FieldState?,
        fieldRow: Int64?,
        revoked: RevokedWriters
    ) throws -> Value {
        if let old, revoked.refusedDots(in: old).isEmpty, let value = old.shownValue { return value }
        if let value = merged.shownValue(without: refused) { return value }
        guard let fieldRow else { return .null }
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT n.node_id, h.counter, h.write FROM history h JOIN node n ON n.id = h.node
                WHERE h.field = ? ORDER BY h.seq DESC
                """,
            arguments: [fieldRow]
        )
        for row in rows {
            guard let node = NodeID(text: row[0]),
                revoked.refusal(of: Dot(node: node, counter: UInt64(clamping: row[1] as Int64))) == nil,
                let json = try? JSON(parsing: row[2] as String), let write = FieldVersion.Write(json: json)
            else { continue }
            switch write {
            case .assign(let value), .overrule(let value, _, _): return value
            case .list: continue
            // An overrule keeps a value; the nearest to "removed" is null.
            case .unset: return .null
            }
        }
        return .null
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
            let stands = old?.state.versions.contains {
                $0.write == .assign(.bool(true)) && revoked.refusal(of: $0.dot) == nil
            }
            guard stands != true else { continue }
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
                    WHERE reason LIKE 'written by revoked node %' ORDER BY counter DESC LIMIT ?
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
