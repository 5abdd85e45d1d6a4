/// A whole replica held in memory: the merge core's reference model.
///
/// It composes the pure parts exactly as a node does (local edits get the next dot and a clock
/// tick; deltas are planned by ``DeltaPlanner`` from an index of version dots; batches are merged
/// field by field), with no storage. The property tests run thousands of histories against it;
/// the SQLite store follows the same steps inside transactions.
public struct Replica: Sendable {
    public let nodeID: NodeID
    /// The writer id local edits are issued under (``WriterContinuity``): the node id at first.
    public private(set) var writer: NodeID
    /// Set when a peer proved that this replica lost writes of ``writer``: the next local edit
    /// must come from a fresh writer (``startWriter(_:)``).
    public private(set) var writerRetired = false
    public private(set) var versionVector: VersionVector
    /// How many edits and merges changed a field here: what a writer marker records
    /// (``WriterContinuity``), so a rollback that loses received changes is caught too.
    public private(set) var changes: UInt64 = 0
    public private(set) var items: [ItemID: ItemState]
    public private(set) var clock: HybridLogicalClock
    /// The items reduced to their minimal tombstone (``collect(below:deletedBefore:at:)``).
    public private(set) var collected: Set<ItemID> = []
    /// When each of ``collected`` was collected (the collector's wall clock).
    public private(set) var collectedAt: [ItemID: UInt64] = [:]
    /// The stream each sender has under way to this replica: what its batches covered so far, and
    /// the sender's writer (its incarnation) when it sent them (``StreamResume``).
    private var streams: [NodeID: (covers: VersionVector, incarnation: NodeID)] = [:]
    /// The version index: which fields hold a version with a given dot.
    private var index: [NodeID: [UInt64: Set<FieldKey>]]

    public init(nodeID: NodeID) {
        self.nodeID = nodeID
        writer = nodeID
        versionVector = VersionVector()
        items = [:]
        clock = HybridLogicalClock()
        index = [:]
    }

    /// The next dot this replica will write with.
    public var nextDot: Dot { Dot(node: writer, counter: versionVector[writer] + 1) }

    /// Issues the following local edits under `id`, a writer id never used before.
    public mutating func startWriter(_ id: NodeID) {
        precondition(versionVector[id] == 0, "a new writer has written nothing")
        writer = id
        writerRetired = false
    }

    /// Takes a peer's version vector into account (its hello, a summary): if the peer holds more
    /// of this replica's current writer than the replica does, the writer is retired.
    public mutating func observe(peer: VersionVector) {
        if WriterContinuity.peerWitnessesRollback(writer: writer, held: versionVector, peer: peer) {
            writerRetired = true
        }
    }

    /// Performs a local edit; returns its dot. Throws, changing nothing, if the edit is refused.
    @discardableResult
    public mutating func apply(
        _ edit: ItemEdit,
        to id: ItemID,
        wallMilliseconds: UInt64,
        trashWindow: UInt64? = nil
    ) throws(EditError) -> Dot {
        precondition(!writerRetired, "a retired writer issues no more dots: start a new one")
        let dot = nextDot
        var probe = clock
        let timestamp = probe.tick(wallMilliseconds: wallMilliseconds)
        let item = items[id] ?? ItemState(id: id)
        let changed = try item.applying(edit, dot: dot, timestamp: timestamp, trashWindow: trashWindow)
        clock = probe
        versionVector.insert(dot)
        changes += 1
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
    /// field states (a single write larger than that travels whole), after what this replica holds
    /// beyond its own vector (unclaimed).
    ///
    /// With `deltaBase` (what the receiver is known to have seen: its announced vector), fields
    /// travel as ``FieldDelta``s where that saves bytes.
    public func delta(for remote: VersionVector, maxUpdates: Int = 256, deltaBase: VersionVector? = nil) -> [DeltaBatch]
    {
        let unclaimed = index.filter { node, counters in counters.keys.contains { $0 > versionVector[node] } }.map(
            \.key
        )
        var planner = DeltaPlanner(
            sender: versionVector,
            receiver: remote,
            maxUpdates: maxUpdates,
            unclaimed: unclaimed
        )
        var batches: [DeltaBatch] = []
        while let plan = planner.nextBatch(versions: { versionRows(node: $0, after: $1, limit: $2) }) {
            let updates = plan.keys.compactMap { key in
                fieldState(key).map { FieldUpdate(key: key, change: $0.change(since: deltaBase)) }
            }
            batches.append(DeltaBatch(updates: updates, covers: plan.covers, base: deltaBase))
        }
        return batches
    }

    /// Merges a batch of a stream known to be delivered whole (tests, whole-delta merges): what it
    /// covers counts at once. Applying a batch twice changes nothing.
    @discardableResult
    public mutating func apply(_ batch: DeltaBatch, wallMilliseconds: UInt64) -> Bool {
        guard merge(batch, wallMilliseconds: wallMilliseconds) else { return false }
        versionVector.join(batch.covers)
        return true
    }

    /// Merges a batch of `sender`'s stream, sent while `sender` wrote as `incarnation`. What it
    /// covers is that stream's progress, and joins the version vector only when the stream
    /// completes (``completeStream(from:)``): a covered write may have been superseded in a field
    /// whose newer state is still to come, and if the sender lost that state meanwhile (a rollback)
    /// the vector would claim a write this replica never held.
    ///
    /// Returns false, changing nothing, for a batch of deltas taken against more than this
    /// replica holds (``DeltaBatch/isApplicable(to:)``): a node refuses it and ends the session.
    @discardableResult
    public mutating func apply(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64
    ) -> Bool {
        guard merge(batch, wallMilliseconds: wallMilliseconds) else { return false }
        if streams[sender]?.incarnation != incarnation { streams[sender] = (VersionVector(), incarnation) }
        streams[sender]!.covers.join(batch.covers)
        return true
    }

    /// `sender`'s stream is complete (its `done`): what its batches covered is held whole.
    public mutating func completeStream(from sender: NodeID) {
        if let stream = streams.removeValue(forKey: sender) { versionVector.join(stream.covers) }
    }

    /// How far `sender`'s interrupted stream got, and the sender's incarnation then: told to the
    /// sender in the hello so the next stream resumes (``StreamResume``).
    public func resume(from sender: NodeID) -> (covers: VersionVector, incarnation: NodeID)? {
        streams[sender]
    }

    /// The sender said hello as `incarnation`: progress recorded under another incarnation is
    /// dropped (the sender may have lost what it streamed).
    public mutating func meet(_ sender: NodeID, incarnation: NodeID) {
        if let stream = streams[sender], stream.incarnation != incarnation { streams[sender] = nil }
    }

    /// False, changing nothing, for a batch of deltas this replica cannot take (a node refuses it
    /// and closes the session).
    private mutating func merge(_ batch: DeltaBatch, wallMilliseconds: UInt64) -> Bool {
        guard batch.isApplicable(to: versionVector) else { return false }
        observe(peer: batch.covers)
        var changed = false
        defer { if changed { changes += 1 } }
        for update in batch.updates {
            for version in update.change.versions {
                clock.observe(version.timestamp, wallMilliseconds: wallMilliseconds)
            }
            if collected.contains(update.key.item), update.key.field != .deleted,
                !update.change.isNews(to: versionVector)
            {
                continue
            }
            // An item this replica does not hold but whose writes it has seen was purged
            // (``purge(collectedBefore:)``): what it forgot on purpose does not come back.
            if items[update.key.item] == nil, !update.change.isNews(to: versionVector) { continue }
            var state = fieldState(update.key) ?? FieldState()
            let before = state
            state.merge(update.change)
            if state != before { changed = true }
            store(update.key, state)
        }
        return true
    }

    /// Reduces every collectable item (``ItemState/isCollectable(below:deletedBefore:)``) to its
    /// minimal tombstone, as the store's collection does, noting `now` as when; returns how many.
    @discardableResult
    public mutating func collect(below stable: VersionVector, deletedBefore cutoff: UInt64, at now: UInt64 = 0) -> Int {
        var count = 0
        for (id, item) in items
        where !collected.contains(id) && item.isCollectable(below: stable, deletedBefore: cutoff) {
            for (name, state) in item.fields where !ItemState.keptByCollection.contains(name) {
                for version in state.versions {
                    index[version.dot.node]?[version.dot.counter]?.remove(FieldKey(item: id, field: name))
                    if index[version.dot.node]?[version.dot.counter]?.isEmpty == true {
                        index[version.dot.node]?[version.dot.counter] = nil
                    }
                }
            }
            items[id] = item.minimalTombstone
            collected.insert(id)
            collectedAt[id] = now
            count += 1
        }
        return count
    }

    /// Forgets every minimal tombstone collected before `cutoff` (the store's purge: collected
    /// longer ago than the away window and a margin for clock skew, so that every member that
    /// could still lack the delete rejoins from a snapshot instead of merging); returns how many. The item is then unknown
    /// here, and a write to it that this replica has seen is ignored if it arrives again.
    @discardableResult
    public mutating func purge(collectedBefore cutoff: UInt64) -> Int {
        let gone = collectedAt.filter { $0.value < cutoff }.map(\.key)
        for id in gone {
            for (name, state) in items[id]?.fields ?? [:] {
                for version in state.versions {
                    index[version.dot.node]?[version.dot.counter]?.remove(FieldKey(item: id, field: name))
                    if index[version.dot.node]?[version.dot.counter]?.isEmpty == true {
                        index[version.dot.node]?[version.dot.counter] = nil
                    }
                }
            }
            items[id] = nil
            collected.remove(id)
            collectedAt[id] = nil
        }
        return gone.count
    }

    /// Comes back after being away, as a node does (Docs/MERGE.md, "Coming back after being
    /// away"): keeps aside the field states holding writes of its own writers (its node id and
    /// the writers named for it) that `peer` lacks, takes `peer`'s snapshot in place of its own
    /// items, and re-issues those writes under `newWriter` (same values, same concurrency),
    /// except into items the snapshot holds deleted, and into items it lacks unless this replica
    /// created them out of the peer's sight and, if it holds them deleted, has a write of its
    /// own to `_deleted` the peer lacks (re-issued with the others' versions it carries, the
    /// delete comes along; without one, the item would come back live). Returns how many writes
    /// were re-issued and into how many items, and how many items' writes were dropped.
    @discardableResult
    public mutating func rejoin(
        from peer: Replica,
        newWriter: NodeID,
        wallMilliseconds: UInt64
    ) -> (writes: Int, items: Int, dropped: Int) {
        precondition(
            newWriter.isWriter(of: nodeID) && versionVector[newWriter] == 0 && peer.versionVector[newWriter] == 0
        )
        let me = nodeID
        let own = { (writer: NodeID) in writer == me || writer.isWriter(of: me) }
        var pending: [(key: FieldKey, state: FieldState)] = []
        var createdHere = Set<ItemID>()
        for (id, item) in items {
            for (name, state) in item.fields {
                let writers = Set(state.context.nodes.filter(own))
                if !state.dots(of: writers, unseenBy: peer.versionVector).isEmpty {
                    pending.append((FieldKey(item: id, field: name), state))
                }
            }
            // Held deleted with no write of its own to `_deleted` that the peer lacks, the field
            // is not kept aside, and a re-issue would bring the item back live: the peer lost the
            // delete with the item (a relay put back from a copy).
            let losesItsDelete =
                item.fields[.deleted].map {
                    item.isDeleted
                        && $0.dots(of: Set($0.context.nodes.filter(own)), unseenBy: peer.versionVector).isEmpty
                } ?? false
            if let type = item.fields[.type], !losesItsDelete,
                type.isOnly(writers: Set(type.context.nodes.filter(own)), unseenBy: peer.versionVector)
            {
                createdHere.insert(id)
            }
        }
        var fresh = Replica(nodeID: nodeID)
        fresh.clock = clock
        fresh.changes = changes + 1
        fresh.writer = newWriter
        for batch in peer.delta(for: VersionVector()) { fresh.apply(batch, wallMilliseconds: wallMilliseconds) }
        self = fresh
        // Not into an item the snapshot holds deleted, nor into one it does not hold unless this
        // replica created it while away: the others collected it.
        let kept = pending.filter {
            items[$0.key.item].map { !$0.isDeleted } ?? createdHere.contains($0.key.item)
        }
        let writers = Set(kept.flatMap { $0.state.context.nodes.filter(own) })
        let dots = Set(kept.flatMap { $0.state.dots(of: writers, unseenBy: versionVector) }).sorted()
        var renamed: [Dot: Dot] = [:]
        for dot in dots { renamed[dot] = Dot(node: newWriter, counter: UInt64(renamed.count + 1)) }
        for (key, state) in kept {
            var merged = fieldState(key) ?? FieldState()
            merged.merge(state.reissued(by: writers, unseenBy: versionVector, renamed: renamed)!)
            store(key, merged)
        }
        if !dots.isEmpty { versionVector.raise(newWriter, to: UInt64(dots.count)) }
        return (
            dots.count, Set(kept.map(\.key.item)).count,
            Set(pending.map(\.key.item)).count - Set(kept.map(\.key.item)).count
        )
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
        for version in state.versions {
            index[version.dot.node, default: [:]][version.dot.counter, default: []].insert(key)
        }
        var item = items[key.item] ?? ItemState(id: key.item)
        item.merge(key.field, state)
        items[key.item] = item
    }
}
