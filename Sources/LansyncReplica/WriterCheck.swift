public import LansyncCore

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
