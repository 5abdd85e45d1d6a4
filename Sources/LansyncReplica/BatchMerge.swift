package import LansyncCore

/// Peer field states merged into a replica in one write transaction, the same way in every store
/// (issue 65: the SQLite store and PostgreSQL each had their own, and they had drifted): each
/// state merged through the core with what the replica holds; refused (a limit's reason) or
/// overruled (a revoked node's writes) by a write of the replica's own where it must be
/// (``PeerOverrule``); saved; and each item's derived columns brought up to date once, at the
/// end (``finish(in:)``), from what the merges changed, without reading the item again.
///
/// The store gives the rows (``MergeRows``). A batch carries an item's fields together, so each
/// item is looked up once, and the fields of an item the batch has just created are not read
/// (they cannot exist yet). An item the replica does not hold comes in only with a write it has
/// not seen: one it purged (Docs/MERGE.md, "Causal stability and collection") stays purged.
package struct BatchMerge<Rows: MergeRows> {
    /// What one item is to this merge.
    private struct Item {
        /// Nil while the item is new to the replica: its row is inserted with its first field.
        var row: Int64?
        /// Reduced to its minimal tombstone by collection: it takes in only writes the replica
        /// has not seen.
        var collected: Bool
        /// Its user fields, counted once when a limit first asks (a new item has none).
        var userFields: Int?
        /// For an item this merge created: the fields saved so far (no other can exist).
        var saved: [FieldName]?

        func mayHold(_ name: FieldName) -> Bool { saved?.contains(name) ?? true }
    }

    package let refuse: FieldRefusal?
    /// The writes refused: revoked nodes' and readers' past their cuts, and, where signatures
    /// are required, the batch's new writes without one (added as the merge finds them).
    package private(set) var revoked: RevokedWriters
    package let wallMilliseconds: UInt64
    /// How many fields (and items deleted) the merge changed.
    package private(set) var changed = 0
    /// How many of the batch's writes were refused for want of their member's signature.
    package private(set) var refusedUnsigned = 0
    /// The runs the batch's proofs hold (checked before it came), by writer.
    private var proven: [NodeID: [ClosedRange<UInt64>]] = [:]
    /// The replica's writer, claimed by the first overrule; its counter counts the merge's dots.
    package private(set) var writer: ClaimedWriter?
    private var items: [ItemID: Item] = [:]
    /// The item merged last, kept out of ``items``: a batch carries an item's fields together, so
    /// most fields find their item here, with no id hashed.
    private var current: (id: ItemID, item: Item)?
    /// The version vector as the merge began, read when first needed.
    private var seen: VersionVector?
    /// What the merge changed in each item's derived columns, by the item's row (applied in any
    /// order: each is one item's own).
    private var derived: [Int64: DerivedChange] = [:]
    private var createdByRevoked: [(row: Int64, id: ItemID)] = []
    /// The dots of the replica's own writes this merge issued, and their leaves, signed when it
    /// finishes.
    private var issued: Set<Dot> = []
    private var runs = RunLog()

    package init(refuse: FieldRefusal? = nil, revoked: RevokedWriters = RevokedWriters(), wallMilliseconds: UInt64) {
        self.refuse = refuse
        self.revoked = revoked
        self.wallMilliseconds = wallMilliseconds
    }

    /// The version vector as the merge began.
    package mutating func seen(in rows: inout Rows) throws -> VersionVector {
        if let seen { return seen }
        let read = try rows.versionVector()
        seen = read
        return read
    }

    /// The next dot of the replica's writer, claimed on first use.
    package mutating func nextDot(in rows: inout Rows) throws -> Dot {
        var claimed = try writer ?? rows.claimWriter()
        claimed.counter += 1
        writer = claimed
        let dot = Dot(node: claimed.id, counter: claimed.counter)
        issued.insert(dot)
        return dot
    }

    /// Merges `updates`, then ``finish(in:)``, and keeps the signed runs of `proofs`; how many
    /// fields (and items deleted) changed.
    package mutating func merge(_ updates: [FieldUpdate], proofs: [RunProof] = [], in rows: inout Rows) throws -> Int {
        // The runs first: the leaves of their versions that do not stay live are kept with them.
        for proof in proofs {
            proven[proof.run.writer, default: []].append(proof.run.first...proof.run.last)
            try rows.keep(proof.run, leaves: proof.total)
            if let certificate = proof.certificate { try rows.keepCertificate(certificate, of: proof.run.key) }
            if !proof.leaves.isEmpty { try rows.keepGone(proof.leaves, of: proof.run.writer) }
        }
        for update in updates { try merge(update, in: &rows) }
        try finish(in: &rows)
        return changed
    }

    /// Merges one field's change.
    package mutating func merge(_ update: FieldUpdate, in rows: inout Rows) throws {
        for version in update.change.versions {
            rows.clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
        }
        let id = update.key.item
        guard var item = try item(id, in: &rows, unlessStale: update.change) else { return }
        defer { current = (id, item) }
        if item.collected, let row = item.row {
            // A write made since (a late concurrent edit, a restore, another delete): the item
            // holds more than its tombstone again, and a later round judges it afresh. (A restore
            // left marked collected would be purged while live.)
            guard update.change.isNews(to: try seen(in: &rows)) else { return }
            try rows.markUncollected(item: row)
            item.collected = false
        }
        let name = update.key.field
        let old = item.mayHold(name) ? try item.row.flatMap { try rows.loadField(item: $0, name: name) } : nil
        var merged = (old?.state ?? FieldState()).merged(with: update.change)
        // Versions superseded before they came: their leaves, for the proofs of their runs.
        if update.change.versions.contains(where: { !merged.holds($0.dot) }) {
            try rows.noteGone(update.change.versions.filter { !merged.holds($0.dot) }, item: id, field: name)
        }
        guard merged != old?.state else { return }
        try refuseUnproven(update.change, old: old?.state, in: &rows)
        var overruled: [FieldVersion] = []
        var createdByRevoked = false
        if let reason = try refusal(of: update, merged: merged, old: old?.state, item: &item, in: &rows) {
            let timestamp = rows.clock.tick(wallMilliseconds: wallMilliseconds)
            let dot = try nextDot(in: &rows)
            PeerOverrule.refuse(
                update.change,
                in: &merged,
                old: old?.state,
                reason: reason,
                dot: dot,
                timestamp: timestamp
            )
        } else {
            switch try overruleRevoked(&merged, old: old, field: name, in: &rows) {
            case .stands: break
            case .overruled(let versions): overruled = versions
            case .createdByRevoked: createdByRevoked = true
            }
        }
        let row = try save(&item, update.key, old: old, new: merged, overruled: overruled, in: &rows)
        if createdByRevoked, !self.createdByRevoked.contains(where: { $0.row == row }) {
            self.createdByRevoked.append((row, id))
        }
    }

    /// Where signatures are required, adds to ``revoked`` the writes of `change` that need one and
    /// came without a run that held: new to the replica (not in `old`, not seen), past the
    /// requirement's point. They are overruled like a revoked node's (Docs/SECURITY.md,
    /// "Requiring signed writes").
    private mutating func refuseUnproven(_ change: FieldChange, old: FieldState?, in rows: inout Rows) throws {
        guard let required = revoked.signatures else { return }
        var unproven: [Dot] = []
        for version in change.versions where required.needsProof(version.dot) {
            let dot = version.dot
            guard !(proven[dot.node]?.contains { $0.contains(dot.counter) } ?? false),
                !(old?.versions.contains { $0.dot == dot } ?? false)
            else { continue }
            if try seen(in: &rows).contains(dot) { continue }
            unproven.append(dot)
        }
        guard !unproven.isEmpty else { return }
        revoked.refuseUnproven(unproven)
        refusedUnsigned += unproven.count
    }

    /// Overrules the writes ``revoked`` refuses that field `name` of item `id` already holds (a
    /// revocation learned after they came).
    package mutating func overruleHeld(_ id: ItemID, field name: FieldName, in rows: inout Rows) throws {
        guard var item = try item(id, in: &rows, unlessStale: nil) else { return }
        defer { current = (id, item) }
        guard let row = item.row, let old = try rows.loadField(item: row, name: name) else { return }
        var merged = old.state
        switch try overruleRevoked(&merged, old: old, field: name, in: &rows) {
        case .stands: return
        case .overruled(let versions):
            _ = try save(&item, FieldKey(item: id, field: name), old: old, new: merged, overruled: versions, in: &rows)
        case .createdByRevoked:
            if !createdByRevoked.contains(where: { $0.row == row }) { createdByRevoked.append((row, id)) }
        }
    }

    /// Brings the items' derived columns up to date, deletes the items a revoked node created (after
    /// the derived columns, which a `_deleted` of this merge may have set), and sets the
    /// overruling writer's counter.
    package mutating func finish(in rows: inout Rows) throws {
        for (row, change) in derived where !change.isEmpty { try rows.updateItem(row: row, by: change) }
        derived = [:]
        for (row, id) in createdByRevoked { try deleteCreatedByRevoked(row: row, id: id, in: &rows) }
        createdByRevoked = []
        if let writer { try rows.setCounter(of: writer.row, to: writer.counter) }
        try rows.sign(runs)
        runs = RunLog()
    }

    /// Notes the leaves of the replica's own writes in a field's new state (a re-issued dot may
    /// name the writes of several fields).
    private mutating func noteOwn(_ key: FieldKey, in state: FieldState) {
        guard !issued.isEmpty else { return }
        for version in state.versions where issued.contains(version.dot) {
            runs.note(version.dot, item: key.item, field: key.field, in: state)
        }
    }

    /// Item `id` as this merge knows it, for the caller to put back in ``current``. Nil if the
    /// replica does not hold it and `change` (nil: a look-up of a held item) brings only writes the
    /// replica has seen.
    private mutating func item(_ id: ItemID, in rows: inout Rows, unlessStale change: FieldChange?) throws -> Item? {
        // Taken out of ``current`` and ``items``, not copied: the caller changes it and puts it
        // back, and a copy left behind would make each change copy its list of saved fields.
        if let held = current {
            current = nil
            if held.id == id { return held.item }
            items[held.id] = held.item
        }
        if let known = items.removeValue(forKey: id) { return known }
        if let held = try rows.findItem(id) { return Item(row: held.row, collected: held.collected) }
        guard let change, change.isNews(to: try seen(in: &rows)) else { return nil }
        return Item(row: nil, collected: false, userFields: 0, saved: [])
    }

    /// Why the relay's limits refuse the merged state, if they do.
    private mutating func refusal(
        of update: FieldUpdate,
        merged: FieldState,
        old: FieldState?,
        item: inout Item,
        in rows: inout Rows
    ) throws -> String? {
        guard let refuse else { return nil }
        var counted: Int?
        let known = item.userFields
        let row = item.row
        let reason = try refuse(update.key, merged, old) {
            if let known { return known }
            let count = try row.map { try rows.userFieldCount(item: $0) } ?? 0
            counted = count
            return count
        }
        if let counted { item.userFields = counted }
        return reason
    }

    /// What a revocation did to one field's merged state.
    private enum RevokedOutcome {
        case stands
        /// Overruled; the refused versions, for history.
        case overruled([FieldVersion])
        /// A revoked node created the item after its cut (``PeerOverrule/Revoked/createdByRevoked``).
        case createdByRevoked
    }

    /// Overrules in `merged` the live writes ``revoked`` refuses: a new write of the replica's
    /// keeps the field's value without them (``PeerOverrule/keptValue(without:merged:old:revoked:history:)``)
    /// and names them as rejected.
    private mutating func overruleRevoked(
        _ merged: inout FieldState,
        old: (row: Int64, state: FieldState)?,
        field: FieldName,
        in rows: inout Rows
    ) throws -> RevokedOutcome {
        guard !revoked.isEmpty else { return .stands }
        switch PeerOverrule.judge(merged, field: field, revoked: revoked) {
        case .stands: return .stands
        case .createdByRevoked: return .createdByRevoked
        case .overrule(let refused, let reason):
            let kept = try PeerOverrule.keptValue(without: refused, merged: merged, old: old?.state, revoked: revoked) {
                try rows.history(ofField: old?.row)
            }
            let versions = merged.versions.filter { refused.contains($0.dot) }
            let dot = try nextDot(in: &rows)
            merged.overrule(
                rejecting: Array(refused),
                keeping: kept,
                reason: reason,
                dot: dot,
                timestamp: rows.clock.tick(wallMilliseconds: wallMilliseconds)
            )
            return .overruled(versions)
        }
    }

    /// Saves a field's merged state (inserting its item's row if the item is new); the item's row.
    private mutating func save(
        _ item: inout Item,
        _ key: FieldKey,
        old: (row: Int64, state: FieldState)?,
        new: FieldState,
        overruled: [FieldVersion],
        in rows: inout Rows
    ) throws -> Int64 {
        let itemRow = try item.row ?? rows.insertItem(key.item)
        item.row = itemRow
        noteOwn(key, in: new)
        _ = try rows.save(
            FieldSave(
                item: itemRow,
                itemID: key.item,
                name: key.field,
                row: old?.row,
                old: old?.state,
                new: new,
                overruled: overruled
            )
        )
        if old == nil {
            item.saved?.append(key.field)
            if !key.field.isReserved, let count = item.userFields { item.userFields = count + 1 }
        }
        derived[itemRow, default: DerivedChange()].note(key.field, old: old?.state, new: new)
        changed += 1
        return itemRow
    }

    /// Deletes an item a revoked node created after its cut, unless a write no cut refuses deleted
    /// it already: the bin, where `get` and `history` still show it.
    private mutating func deleteCreatedByRevoked(row: Int64, id: ItemID, in rows: inout Rows) throws {
        let old = try rows.loadField(item: row, name: .deleted)
        guard !PeerOverrule.deletionStands(old?.state, revoked: revoked) else { return }
        var state = old?.state ?? FieldState()
        state.assign(
            .bool(true),
            dot: try nextDot(in: &rows),
            timestamp: rows.clock.tick(wallMilliseconds: wallMilliseconds)
        )
        noteOwn(FieldKey(item: id, field: .deleted), in: state)
        _ = try rows.save(
            FieldSave(item: row, itemID: id, name: .deleted, row: old?.row, old: old?.state, new: state)
        )
        var change = DerivedChange()
        change.note(.deleted, old: old?.state, new: state)
        try rows.updateItem(row: row, by: change)
        changed += 1
    }
}
