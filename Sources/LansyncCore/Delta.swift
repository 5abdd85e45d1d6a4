/// Names one field of one item: the unit of storage, sync and merge.
public struct FieldKey: Hashable, Comparable, Sendable {
    public let item: ItemID
    public let field: FieldName

    public init(item: ItemID, field: FieldName) {
        self.item = item
        self.field = field
    }

    public static func < (lhs: FieldKey, rhs: FieldKey) -> Bool {
        lhs.item != rhs.item ? lhs.item < rhs.item : lhs.field < rhs.field
    }
}

/// One field's change, as sent to a replica that lacks some of it: its whole state, or the part
/// the receiver lacks (``FieldDelta``).
public struct FieldUpdate: Hashable, Sendable {
    public let key: FieldKey
    public let change: FieldChange

    public init(key: FieldKey, state: FieldState) {
        self.key = key
        self.change = .state(state)
    }

    public init(key: FieldKey, change: FieldChange) {
        self.key = key
        self.change = change
    }

    public init(key: FieldKey, delta: FieldDelta) {
        self.key = key
        self.change = .delta(delta)
    }
}

/// A field's whole state, or a delta of it.
public enum FieldChange: Hashable, Sendable {
    case state(FieldState)
    case delta(FieldDelta)

    public var context: VersionVector {
        switch self {
        case .state(let state): state.context
        case .delta(let delta): delta.context
        }
    }

    /// The versions carried in full (a delta leaves out those its base has seen).
    public var versions: [FieldVersion] {
        switch self {
        case .state(let state): state.versions
        case .delta(let delta): delta.versions
        }
    }

    /// The dots of every live version of the sender's state, carried in full or not.
    public var versionDots: [Dot] {
        switch self {
        case .state(let state): state.versions.map(\.dot)
        case .delta(let delta): (delta.versions.map(\.dot) + delta.keptVersions).sorted()
        }
    }

    public var isDelta: Bool {
        if case .delta = self { return true }
        return false
    }
}

extension FieldState {
    /// Merges a whole state or a delta (see ``FieldDelta`` for what a delta assumes).
    public mutating func merge(_ change: FieldChange) {
        switch change {
        case .state(let state): merge(state)
        case .delta(let delta): merge(delta)
        }
    }

    public func merged(with change: FieldChange) -> FieldState {
        var result = self
        result.merge(change)
        return result
    }

    /// What to send of this state to a receiver known to have seen every write up to `base`: a
    /// delta when one is possible and leaves something out, else the whole state.
    public func change(since base: VersionVector?) -> FieldChange {
        if let base, deltaSaves(since: base), let delta = delta(since: base) { return .delta(delta) }
        return .state(self)
    }
}

/// A bounded piece of a delta: field states to merge, and what the receiver may record as received
/// once it has merged them.
///
/// ``covers`` says: for each listed origin node, every field state holding a version written by
/// that node up to that counter, which the receiver lacked, is in this batch or an earlier one of
/// the same stream. Applying the updates and joining ``covers`` into the replica's version vector
/// in one transaction is what lets an interrupted sync resume where it stopped.
///
/// ``base`` is what the sender knew the receiver to have seen when it planned the stream: nil for
/// a receiver of protocol 1.1 (whole states without removal logs), else the base of every
/// ``FieldDelta`` in the batch. A receiver whose version vector does not cover it must refuse
/// the batch's deltas (``isApplicable(to:)``).
public struct DeltaBatch: Hashable, Sendable {
    public let updates: [FieldUpdate]
    public let covers: VersionVector
    public let base: VersionVector?
    /// The signed runs of the versions the batch carries (protocol 1.14, Docs/SECURITY.md,
    /// "Signed writes"): as the sender built them, or, once received and checked, those that held.
    public var proofs: [RunProof] = []

    public init(updates: [FieldUpdate], covers: VersionVector, base: VersionVector? = nil) {
        self.updates = updates
        self.covers = covers
        // What the deltas need of the receiver, no more (``FieldDelta`` trims each base to its
        // field's context), so a receiver is refused only when it lacks something that matters.
        self.base = base.map { _ in
            updates.reduce(into: VersionVector()) { base, update in
                if case .delta(let delta) = update.change { base.join(delta.base) }
            }
        }
    }

    /// True if a field state or delta in the batch carries what nodes older than protocol 1.6
    /// cannot read: a removal (``FieldVersion/Write/unset``) or a link (``Value/ref(_:)``).
    public var needsProtocol16: Bool {
        updates.contains { update in
            let entries: [ListEntry]
            switch update.change {
            case .state(let state): entries = state.entries
            case .delta(let delta): entries = delta.entries
            }
            return entries.contains { !$0.value.links.isEmpty }
                || update.change.versions.contains { version in
                    switch version.write {
                    case .unset: true
                    case .assign(let value), .overrule(let value, _, _): !value.links.isEmpty
                    case .list(let change): (change.added + change.removed).contains { !$0.links.isEmpty }
                    }
                }
        }
    }

    /// True unless the batch holds deltas taken against more than a replica with `versionVector`
    /// has seen: merging those could lose the removal of a tag it holds.
    public func isApplicable(to versionVector: VersionVector) -> Bool {
        guard let base, updates.contains(where: \.change.isDelta) else { return true }
        return versionVector.covers(base)
    }
}

/// Plans the delta a replica sends to another: the field states with a version the receiver's
/// version vector has not seen, in bounded batches.
///
/// The stream goes origin node by origin node (in id order), and within one node by counter, so
/// each batch can state how far it got (``DeltaBatch/covers``). It asks its source only for
/// "versions of node N after counter C" (an index range scan in storage), so its cost is
/// proportional to what the receiver lacks, never to the replica's size. The versions of one write
/// (one dot can touch several fields) never straddle two batches.
///
/// Versions the sender holds beyond its own vector (``unclaimed``) go first, before any batch
/// covers anything: such a version may be the only one left of a field that a write the stream
/// claims also changed (a newer write from an unfinished stream replaced it), and a claim must
/// never reach the receiver before its field does.
///
/// Pure: the caller supplies the index lookups and turns the planned keys into field states.
public struct DeltaPlanner: Sendable {
    /// One row of the version index: a version's counter (its dot's node is the one asked for)
    /// and the field holding it.
    public typealias IndexRow = (counter: UInt64, key: FieldKey)

    private let sender: VersionVector
    private var position: VersionVector
    private var pending: [NodeID]
    /// Nodes whose versions the sender holds beyond its own vector (part of a stream it has not
    /// finished receiving): sent before everything else, and never covered.
    private var unclaimed: [NodeID]
    private var unclaimedPosition: [NodeID: UInt64] = [:]
    public let maxUpdates: Int

    /// - Parameters:
    ///   - sender: the sending replica's version vector when the session started.
    ///   - receiver: the version vector the receiver announced.
    ///   - maxUpdates: the most field states per batch.
    ///   - unclaimed: nodes of which the sender holds versions beyond `sender` (its index says so);
    ///     their states go too, so that what only this replica holds spreads, but no batch claims them.
    public init(sender: VersionVector, receiver: VersionVector, maxUpdates: Int, unclaimed: [NodeID] = []) {
        precondition(maxUpdates > 0)
        self.sender = sender
        self.position = receiver
        // Filtered before sorting: a live delta's sender names every writer of the cluster (a
        // relay's, a thousand), of which one or two are pending.
        self.pending = sender.counters.compactMap { $0.value > receiver[$0.key] ? $0.key : nil }.sorted()
        self.unclaimed = unclaimed.sorted()
        for node in unclaimed { unclaimedPosition[node] = max(sender[node], receiver[node]) }
        self.maxUpdates = maxUpdates
    }

    /// The most version rows one write can have: one per field of an item, reserved ones included.
    static let maxRowsPerWrite = Limits.maxFieldsPerItem + 2

    /// Stops planning `node`'s versions: later batches do not cover it beyond where it stands
    /// (used when a state that must be sent cannot be read). False if it was not pending.
    public mutating func abandon(_ node: NodeID) -> Bool {
        let before = pending.count + unclaimed.count
        pending.removeAll { $0 == node }
        unclaimed.removeAll { $0 == node }
        return pending.count + unclaimed.count < before
    }

    /// True once every batch has been planned.
    public var isFinished: Bool { pending.isEmpty && unclaimed.isEmpty }

    /// The first `count` nodes ``nextBatch(limit:versions:)`` will ask for, in its order, each
    /// with the counter its rows start after: a store whose every read is a round trip reads them
    /// ahead in one (the planner asks the same questions whether or not it did).
    public func upcoming(_ count: Int) -> [(node: NodeID, after: UInt64)] {
        let first = unclaimed.prefix(count).map { (node: $0, after: unclaimedPosition[$0] ?? 0) }
        return first + pending.prefix(count - first.count).map { (node: $0, after: position[$0]) }
    }

    /// Plans the next batch: the keys to send and what the batch covers; nil when finished.
    ///
    /// - Parameter versions: the version index lookup, `(node, afterCounter, limit)` → up to `limit`
    ///   rows of that node's versions with a greater counter, ordered by counter.
    /// - Parameter limit: a smaller cap on field states for this batch (at least 1), used by
    ///   callers that also bound a batch's bytes.
    /// - Parameter runs: the counters of the signed run holding `node`'s write at a counter (nil:
    ///   none): a batch that would end inside a run ends before it instead, so a run travels
    ///   whole and its proof needs nothing the batch does not hold (unless the batch would hold
    ///   nothing else).
    public mutating func nextBatch(
        limit: Int? = nil,
        versions: (NodeID, UInt64, Int) throws -> [IndexRow]
    ) rethrows -> (keys: [FieldKey], covers: VersionVector)? {
        try nextBatch(limit: limit, versions: versions, runs: { _, _ in nil })
    }

    /// ``nextBatch(limit:versions:)``, keeping signed runs whole.
    public mutating func nextBatch(
        limit: Int? = nil,
        versions: (NodeID, UInt64, Int) throws -> [IndexRow],
        runs: (NodeID, UInt64) throws -> ClosedRange<UInt64>?
    ) rethrows -> (keys: [FieldKey], covers: VersionVector)? {
        let maxUpdates = max(1, min(limit ?? self.maxUpdates, self.maxUpdates))
        guard !isFinished else { return nil }
        var keys: [FieldKey] = []
        var included = Set<FieldKey>()
        var covers = VersionVector()
        func take(_ rows: some Sequence<IndexRow>) {
            for row in rows where included.insert(row.key).inserted { keys.append(row.key) }
        }
        while keys.count < maxUpdates {
            let node: NodeID
            let claimed: Bool
            if let next = unclaimed.first {
                (node, claimed) = (next, false)
            } else if let next = pending.first {
                (node, claimed) = (next, true)
            } else {
                break
            }
            let end = claimed ? sender[node] : .max
            let start = claimed ? position[node] : unclaimedPosition[node] ?? 0
            let room = maxUpdates - keys.count
            // Ask for enough rows to hold a whole write even when room is small, plus one to see
            // whether the node has more.
            let limit = max(room, Self.maxRowsPerWrite) + 1
            let fetched = try versions(node, start, limit)
            let rows = fetched.filter { $0.counter <= end }
            let exhausted = fetched.count < limit || rows.count < fetched.count
            var cut = Self.fit(rows, room: room, batchIsEmpty: keys.isEmpty)
            if cut > 0, cut < rows.count, let run = try runs(node, rows[cut - 1].counter) {
                cut = Self.beforeRun(run, rows: rows, cut: cut, batchIsEmpty: keys.isEmpty)
            }
            if cut == 0, !rows.isEmpty { break }
            take(rows.prefix(cut))
            if cut == rows.count && exhausted {
                if claimed {
                    covers.raise(node, to: end)
                    position.raise(node, to: end)
                    pending.removeFirst()
                } else {
                    unclaimed.removeFirst()
                }
            } else {
                let reached = rows[cut - 1].counter
                if claimed {
                    covers.raise(node, to: reached)
                    position.raise(node, to: reached)
                } else {
                    unclaimedPosition[node] = reached
                }
                break
            }
        }
        if keys.isEmpty, covers.isEmpty, isFinished { return nil }
        return (keys, covers)
    }

    /// Where a batch cut at `cut` (inside `rows`) ends so as not to split `run`: before the
    /// run's first row (the rows of one run are consecutive), unless that leaves the batch
    /// empty; at `cut` if the run ends there.
    static func beforeRun(_ run: ClosedRange<UInt64>, rows: [IndexRow], cut: Int, batchIsEmpty: Bool) -> Int {
        guard run.contains(rows[cut].counter) else { return cut }
        let whole = rows[..<cut].firstIndex { $0.counter >= run.lowerBound } ?? cut
        return whole > 0 || !batchIsEmpty ? whole : cut
    }

    /// How many of `rows` (one node's, by counter) go in a batch with `room` left: never the
    /// rows of one write split across batches, so 0 when the next write does not fit, except in
    /// an empty batch, where one write touching more fields than a batch holds travels whole.
    static func fit(_ rows: [IndexRow], room: Int, batchIsEmpty: Bool) -> Int {
        var cut = min(room, rows.count)
        guard cut < rows.count else { return cut }
        let boundary = rows[cut].counter
        while cut > 0, rows[cut - 1].counter == boundary { cut -= 1 }
        if cut == 0, batchIsEmpty {
            while cut < rows.count, rows[cut].counter == boundary { cut += 1 }
        }
        return cut
    }
}

extension DeltaBatch {
    /// The highest counter of `writer` the batch's field states have seen (their contexts): a
    /// replica whose own current writer a state names beyond what it holds was rolled back, and
    /// must take a new writer before it writes again, whoever sent the state and whatever the
    /// covers say (a local write's dot must lie past every context it meets).
    public func highestSeen(of writer: NodeID) -> UInt64 {
        updates.reduce(0) { max($0, $1.change.context[writer]) }
    }
}
