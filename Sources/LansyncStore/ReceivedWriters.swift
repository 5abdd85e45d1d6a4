import GRDB
public import LansyncCore

/// Bounds on the writers that peers' batches may bring into a replica.
///
/// A member is trusted with data, not with the size of every replica's version vector: a writer
/// id costs a row in table `node`, an entry in every hello and summary this replica sends, and an
/// entry in every peer's vector after that. Without a bound, one session naming a million made-up
/// writers would make the vector too large for the frame every hello must fit in.
public struct WriterBounds: Sendable, Equatable {
    /// The most writers the replica holds: a batch whose states would take it past this is
    /// refused (a permanent error, in `status` on both sides).
    public var total: Int
    /// The most writers new to the replica that one session may bring; a batch past it ends the
    /// session with a temporary error, and the next session carries on from there.
    public var perSession: Int

    public init(total: Int = WriterBounds.standard.total, perSession: Int = WriterBounds.standard.perSession) {
        self.total = total
        self.perSession = perSession
    }

    /// 65,536 writers in all (about 1.3 MB of version vector), 16,384 new ones per session.
    public static let standard = WriterBounds(total: 65_536, perSession: 16_384)
}

/// What merging a peer's batch did, beyond the fields it changed.
public struct ReceivedBatch: Sendable, Equatable {
    /// Field states that changed.
    public var changed = 0
    /// Writers new to this replica that the batch's states named (each now has a `node` row).
    public var newWriters = 0
    /// Entries of the batch's covers that name a writer this replica does not know and no state
    /// of the batch names: not recorded (see ``WriterCheck``).
    public var unverifiedCovers = 0
    /// The replica's version vector as the batch's transaction left it, read in that transaction,
    /// when it changed a field or completed a stream (what the node tells its other sessions);
    /// nil otherwise.
    public var version: VersionVector?

    public init(changed: Int = 0, newWriters: Int = 0, unverifiedCovers: Int = 0, version: VersionVector? = nil) {
        self.changed = changed
        self.newWriters = newWriters
        self.unverifiedCovers = unverifiedCovers
        self.version = version
    }
}

/// Checks a received batch's writers against what the replica knows, before anything is written.
///
/// - A writer named by the batch's states (their contexts, dots and refused dots) that the
///   replica does not know yet is new: it gets a row when the batch is merged, so it counts
///   against ``WriterBounds``.
/// - A writer named only by the batch's covers, and unknown to the replica, is dropped from the
///   covers. Covers claim "every state of this writer you lacked has been sent"; a writer that
///   wrote anything lives on in some field's context, which the replica holds once it holds that
///   field, so a true claim is about a writer the replica knows by the end of the stream. Dropping
///   one only under-claims: the writer's entry comes again with the next delta, once a state has
///   named it. A made-up writer never gets a row, an entry in the vector, or a peer's attention.
///
/// The look-ups are reads, made before the write transaction: a peer's batch holds the write lock
/// only for its merge. The check is the same for every store; each store answers "which of these
/// writers do you hold" its own way (the SQLite store: one index look-up per writer, or, for a
/// batch naming more than ``scanAbove`` (a member making writers up names tens of thousands), one
/// read of every writer's id: a single statement, which stopping the node interrupts).
public struct WriterCheck: Sendable {
    /// Writers the states name that have no row yet.
    public private(set) var newWriters: Set<NodeID> = []
    /// The covers with unknown, unnamed writers dropped.
    public private(set) var covers = VersionVector()
    public private(set) var unverifiedCovers = 0

    /// Past this many writers to look up, the SQLite store reads every writer's id at once instead.
    static let scanAbove = 256

    /// Looks up, in one read, the writers `batch` names that `cache` does not know yet (none, for
    /// a batch of writers this process has seen before).
    init(_ batch: DeltaBatch, cache: NodeRows, read: ((Database) throws -> Void) throws -> Void) throws {
        try self.init(batch, isKnown: cache.isKnown) { unknown in
            var found = Set<NodeID>()
            if unknown.count > Self.scanAbove {
                try read { db in
                    let held = Set(try String.fetchAll(db, sql: "SELECT node_id FROM node"))
                    found = unknown.filter { held.contains($0.text) }
                }
            } else {
                try read { db in
                    let known = try db.cachedStatement(sql: "SELECT 1 FROM node WHERE node_id = ?")
                    for node in unknown where try Bool.fetchOne(known, arguments: [node.text]) != nil {
                        found.insert(node)
                    }
                }
            }
            cache.noteCommitted(found)
            return found
        }
    }

    /// Checks the writers `batch` names: `isKnown` says which a cache knows already, `held`
    /// answers, in one read, which of the others the replica holds (asked only when there are
    /// some).
    public init(
        _ batch: DeltaBatch,
        isKnown cached: (NodeID) -> Bool,
        held: (Set<NodeID>) throws -> Set<NodeID>
    ) throws {
        var named = Set<NodeID>()
        for update in batch.updates {
            named.formUnion(update.change.context.counters.keys)
            for case .overrule(_, let rejected, _) in update.change.versions.map(\.write) {
                named.formUnion(rejected.map(\.node))
            }
        }
        let unknown = named.union(batch.covers.counters.keys).filter { !cached($0) }
        let found = unknown.isEmpty ? [] : try held(unknown)
        func isKnown(_ node: NodeID) -> Bool { found.contains(node) || !unknown.contains(node) }
        newWriters = named.filter { !isKnown($0) }
        var kept: [NodeID: UInt64] = [:]
        for (node, counter) in batch.covers.counters {
            if named.contains(node) || isKnown(node) {
                kept[node] = counter
            } else {
                unverifiedCovers += 1
            }
        }
        covers = kept.count == batch.covers.counters.count ? batch.covers : VersionVector(kept)
    }

    /// Throws unless merging the batch keeps the replica within `bounds`, given `allowance`
    /// writers still allowed to be new in this session.
    func check(_ bounds: WriterBounds, allowance: Int, db: Database) throws {
        guard !newWriters.isEmpty else { return }
        // Rows are only ever added, so the largest row id counts them without a scan.
        try check(bounds, allowance: allowance) {
            try Int.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM node") ?? 0
        }
    }

    /// The same for any store: `held` counts the writers the replica holds (read only when the
    /// batch brings new ones within the session's allowance).
    public func check(_ bounds: WriterBounds, allowance: Int, held: () throws -> Int) throws {
        guard !newWriters.isEmpty else { return }
        guard newWriters.count <= allowance else {
            throw StoreError.tooManyNewWriters(new: newWriters.count, perSession: bounds.perSession)
        }
        let held = try held()
        guard held + newWriters.count <= bounds.total else {
            throw StoreError.tooManyWriters(held: held, new: newWriters.count, limit: bounds.total)
        }
    }
}

extension FieldState {
    /// Every node the state names, each once, in id order: its context's, and those whose
    /// writes an overrule rejected. A store gives each a row when it saves the state, which is
    /// what makes a writer known (``WriterCheck``).
    public var namedNodes: [NodeID] {
        // The context names each node once; an overrule's rejected writes may add some.
        var nodes = context.nodes
        for case .overrule(_, let rejected, _) in versions.map(\.write) {
            for node in rejected.map(\.node) where !nodes.contains(node) { nodes.append(node) }
        }
        return nodes
    }
}

extension ReplicaStore {
    /// How many writers (rows of table `node`) this replica knows: what ``WriterBounds/total``
    /// bounds.
    public func writerCount() throws(StoreError) -> Int {
        try guarded { try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM node") ?? 0 } }
    }
}
