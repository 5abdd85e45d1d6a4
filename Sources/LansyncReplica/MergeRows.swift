package import LansyncCore

/// What every write of field states asks of a store, in one of its write transactions: the
/// replica's clock and a field's save. ``MergeRows`` (a peer's batch) and ``EditRows`` (local
/// edits) build on it.
package protocol FieldRows {
    /// The replica's hybrid logical clock, as the transaction will save it.
    var clock: HybridLogicalClock { get set }
    /// Writes a field's new state and keeps the version index, history and the change feed in
    /// step; its row.
    mutating func saveField(_ save: FieldSave) throws -> Int64
    /// What signs the replica's own writes (nil: they are written unsigned).
    var signer: (any WriteSigner)? { get }
    /// Keeps a signed run (the replica's own, or one a peer's batch proved) of `leaves` leaves.
    mutating func keep(_ run: SignedRun, leaves: Int) throws
    /// Keeps the leaves of `writer`'s versions that the replica does not hold live, each only if
    /// a held run holds its dot (its proof needs it: ``RunProofs``).
    mutating func keepGone(_ leaves: [RunLeaf], of writer: NodeID) throws
    /// Notes that the transaction commits writes of the replica's own without their signature
    /// (no signer, or it failed): clears meta `own_writes_signed`, so the node's next start
    /// signs them (``HeldWriteSigning``).
    mutating func noteUnsignedOwnWrites() throws
}

extension FieldRows {
    /// Signs the runs of `log` and keeps them, in the transaction that wrote them: a write is
    /// never committed without its signature (unless the replica has no signer).
    package mutating func sign(_ log: RunLog) throws {
        guard !log.isEmpty else { return }
        guard let signer else { return try noteUnsignedOwnWrites() }
        let runs = log.runs()
        let signed = log.signed(runs, by: signer)
        for (run, leaves) in signed { try keep(run, leaves: leaves) }
        if signed.count < runs.count { try noteUnsignedOwnWrites() }
    }

    /// Keeps the leaves of `versions` of field `field` of item `item`, which leave (or never
    /// reach) the replica's live versions, where a held run needs them (``keepGone(_:of:)``).
    package mutating func noteGone(_ versions: some Sequence<FieldVersion>, item: ItemID, field: FieldName) throws {
        var byWriter: [NodeID: [RunLeaf]] = [:]
        for version in versions {
            byWriter[version.dot.node, default: []].append(RunLeaf(item: item, field: field, version: version))
        }
        for (writer, leaves) in byWriter { try keepGone(leaves, of: writer) }
    }

    /// Saves a field as ``saveField(_:)`` does, keeping first the leaves of the versions the save
    /// drops (superseded by the new state).
    package mutating func save(_ save: FieldSave) throws -> Int64 {
        if let old = save.old, old.versions.contains(where: { !save.new.holds($0.dot) }) {
            try noteGone(old.versions.filter { !save.new.holds($0.dot) }, item: save.itemID, field: save.name)
        }
        return try saveField(save)
    }
}

/// One field's new state to save, and what it replaces.
package struct FieldSave: Sendable {
    /// The item's row and id.
    package var item: Int64
    package var itemID: ItemID
    package var name: FieldName
    /// The field's row; nil for a new field.
    package var row: Int64?
    package var old: FieldState?
    package var new: FieldState
    /// The versions an overrule refused (for history).
    package var overruled: [FieldVersion]

    package init(
        item: Int64,
        itemID: ItemID,
        name: FieldName,
        row: Int64?,
        old: FieldState?,
        new: FieldState,
        overruled: [FieldVersion] = []
    ) {
        self.item = item
        self.itemID = itemID
        self.name = name
        self.row = row
        self.old = old
        self.new = new
        self.overruled = overruled
    }
}

/// The rows a batch merge reads and writes, in one of a backend's write transactions: what
/// ``BatchMerge`` asks of a store, each a step in that store's SQL, none a decision. The SQLite
/// store and PostgreSQL implement it; the merge itself (what is news, what a limit or a
/// revocation overrules, which item a revoked node created, what the derived columns become) is
/// written once, in ``BatchMerge``.
package protocol MergeRows: FieldRows {
    /// Keeps `certificate` (DER), checked to be the cluster authority's for member key `key`, to
    /// pass on with the key's runs (``RunProofs``); one already kept for the key stays.
    mutating func keepCertificate(_ certificate: [UInt8], of key: [UInt8]) throws
    /// Item `id`'s row, and whether collection reduced it to its tombstone; nil if the replica
    /// does not hold it (never did, or purged it).
    mutating func findItem(_ id: ItemID) throws -> (row: Int64, collected: Bool)?
    /// Inserts a row for item `id`, which the replica does not hold; the row.
    mutating func insertItem(_ id: ItemID) throws -> Int64
    /// The collected item in `row` holds more than its tombstone again: a later round judges it
    /// afresh.
    mutating func markUncollected(item row: Int64) throws
    /// Field `name` of the item in row `item`: its row and state; nil if the item has no such field.
    mutating func loadField(item: Int64, name: FieldName) throws -> (row: Int64, state: FieldState)?
    /// How many user fields (not reserved ones) the item in row `item` has.
    mutating func userFieldCount(item: Int64) throws -> Int
    /// Applies a change of an item's derived columns (type, deletion, conflict count).
    mutating func updateItem(row: Int64, by change: DerivedChange) throws
    /// A field's history, newest first: each write's dot and its JSON (none for `row` nil).
    mutating func history(ofField row: Int64?) throws -> [(dot: Dot, write: String)]
    /// The replica's version vector.
    mutating func versionVector() throws -> VersionVector
    /// The writer this replica's own writes go under now, and its counter (a new writer if the
    /// current one is retired or not the replica's to use).
    mutating func claimWriter() throws -> ClaimedWriter
    /// Sets the counter of the writer in node row `row`.
    mutating func setCounter(of row: Int64, to counter: UInt64) throws
}

/// A writer this replica writes under in one transaction: its id, its node row, and the counter
/// of its last dot so far.
package struct ClaimedWriter: Sendable {
    package let id: NodeID
    package let row: Int64
    package var counter: UInt64

    package init(id: NodeID, row: Int64, counter: UInt64) {
        self.id = id
        self.row = row
        self.counter = counter
    }
}

/// How merged field states change an item's derived columns: its conflict count by a delta, its
/// type and deletion when `_type` or `_deleted` changed. Applied in one statement, with no read.
package struct DerivedChange: Sendable {
    package var conflicts = 0
    package var type: String?
    package var deleted: Bool?

    package init() {}

    package var isEmpty: Bool { conflicts == 0 && type == nil && deleted == nil }

    package mutating func note(_ name: FieldName, old: FieldState?, new: FieldState) {
        let counts = name != .deleted
        conflicts += (counts && new.hasConflict ? 1 : 0) - (counts && old?.hasConflict == true ? 1 : 0)
        guard name == .type || name == .deleted else { return }
        var item = ItemState(id: ItemID(unchecked: ""))
        item.merge(name, new)
        if name == .type { type = item.type } else { deleted = item.isDeleted }
    }
}
