/// A whole replica held in memory: the merge core's reference model.
///
/// It composes the pure parts exactly as a node does (local edits get the next dot and a clock
/// tick; deltas are planned by ``DeltaPlanner`` from an index of version dots; batches are merged
/// field by field), with no storage. The property tests run thousands of histories against it;
/// the SQLite store follows the same steps inside transactions.
public struct Replica: Sendable {
    public let nodeID: NodeID
    public private(set) var versionVector: VersionVector
    public private(set) var items: [ItemID: ItemState]
    public private(set) var clock: HybridLogicalClock
    /// The version index: which fields hold a version with a given dot.
    private var index: [NodeID: [UInt64: Set<FieldKey>]]

    public init(nodeID: NodeID) {
        self.nodeID = nodeID
        versionVector = VersionVector()
        items = [:]
        clock = HybridLogicalClock()
        index = [:]
    }

    /// The next dot this replica will write with.
    public var nextDot: Dot { Dot(node: nodeID, counter: versionVector[nodeID] + 1) }

    /// Performs a local edit; returns its dot. Throws, changing nothing, if the edit is refused.
    @discardableResult
    public mutating func apply(_ edit: ItemEdit, to id: ItemID, wallMilliseconds: UInt64) throws(EditError) -> Dot {
        let dot = nextDot
        var probe = clock
        let timestamp = probe.tick(wallMilliseconds: wallMilliseconds)
        let item = items[id] ?? ItemState(id: id)
        let changed = try item.applying(edit, dot: dot, timestamp: timestamp)
        clock = probe
        versionVector.insert(dot)
        for (name, state) in changed { store(FieldKey(item: id, field: name), state) }
        return dot
    }

    public func fieldState(_ key: FieldKey) -> FieldState? {
        items[key.item]?.fields[key.field]
    }

    /// Rows of the version index for one origin node, as ``DeltaPlanner`` asks for them.
    public func versionRows(node: NodeID, after counter: UInt64, limit: Int) -> [DeltaPlanner.IndexRow] {
        guard let byCounter = index[node] else { return [] }
        var rows: [DeltaPlanner.IndexRow] = []
        for c in byCounter.keys.sorted() where c > counter {
            for key in byCounter[c]!.sorted() { rows.append((c, key)) }
            if rows.count >= limit { break }
        }
        return Array(rows.prefix(limit))
    }

    /// Everything a replica with version vector `remote` lacks, in batches of at most `maxUpdates`
    /// field states (a single write larger than that travels whole).
    public func delta(for remote: VersionVector, maxUpdates: Int = 256) -> [DeltaBatch] {
        var planner = DeltaPlanner(sender: versionVector, receiver: remote, maxUpdates: maxUpdates)
        var batches: [DeltaBatch] = []
        while let plan = planner.nextBatch(versions: { versionRows(node: $0, after: $1, limit: $2) }) {
            let updates = plan.keys.compactMap { key in fieldState(key).map { FieldUpdate(key: key, state: $0) } }
            batches.append(DeltaBatch(updates: updates, covers: plan.covers))
        }
        return batches
    }

    /// Merges a batch received from another replica. Applying a batch twice changes nothing.
    public mutating func apply(_ batch: DeltaBatch, wallMilliseconds: UInt64) {
        for update in batch.updates {
            var state = fieldState(update.key) ?? FieldState()
            state.merge(update.state)
            for version in update.state.versions { clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds) }
            store(update.key, state)
        }
        versionVector.join(batch.covers)
    }

    /// Every item's view, sorted by id.
    public var views: [ItemView] {
        items.keys.sorted().map { items[$0]!.view }
    }

    /// Every open conflict, sorted by item and field.
    public var conflicts: [FieldConflict] {
        items.keys.sorted().flatMap { items[$0]!.conflicts }
    }

    private mutating func store(_ key: FieldKey, _ state: FieldState) {
        let old = fieldState(key)
        for version in old?.versions ?? [] { index[version.dot.node]?[version.dot.counter]?.remove(key) }
        for version in old?.versions ?? [] where index[version.dot.node]?[version.dot.counter]?.isEmpty == true {
            index[version.dot.node]?[version.dot.counter] = nil
        }
        for version in state.versions { index[version.dot.node, default: [:]][version.dot.counter, default: []].insert(key) }
        var item = items[key.item] ?? ItemState(id: key.item)
        item.merge(key.field, state)
        items[key.item] = item
    }
}
