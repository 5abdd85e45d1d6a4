public import LansyncCore

/// The batches a replica sends to a peer whose version vector is known: ``DeltaPlanner`` driven
/// by the store's version index, reading each batch's field states when it is asked for.
///
/// Batches are bounded both in field states (`maxUpdates`) and in bytes (`budgetBytes`): when the
/// planned states weigh more than the budget, the batch is planned again with half as many (a
/// single larger state still travels alone).
///
/// With a delta base (a peer of protocol 1.2 known to have seen every write up to it), a field
/// whose list the peer mostly holds travels as a ``FieldDelta``; the byte budget still counts
/// stored states, so a batch of deltas only ever weighs less than planned.
///
/// What a batch covers must be true when it reaches the receiver: field deltas are taken against
/// what the receiver's vector claims, so a claim without its field would lose a list element for
/// good, with vectors that say nothing is missing. The walk finds a field by its live versions,
/// and a field can have left the claimed range while still holding a claimed write's effect:
/// - replaced before the stream began, by a version beyond the sender's own vector (from a
///   stream it has not finished receiving): such versions go first, before anything is claimed
///   (``DeltaPlanner``);
/// - replaced while the stream goes on, before the walk reached it: every batch also carries
///   the fields whose versions left the index since the stream looked last (table `field`,
///   `superseded_at`), looked up after the walk, and the walk claims nothing while such fields
///   remain to be sent.
/// Either kind is sent only if it has seen a write the stream claims that the receiver is not
/// known to hold (``needsSending(_:holds:)``).
public struct DeltaStream: Sendable {
    let store: any DeltaReading
    var planner: DeltaPlanner
    /// The receiver's version vector the stream was planned against.
    let receiver: VersionVector
    /// The sender's version vector the stream was planned with: what it may claim.
    let claimable: VersionVector
    /// True for a session's first delta: everything held beyond the sender's vector goes, so that
    /// what only this replica holds spreads (else only what a claim needs).
    let spreadsUnclaimed: Bool
    let deltaBase: VersionVector?
    /// The replica's signer: its cluster is the one the runs are signed for (a proof pieced
    /// together from kept digests and live versions is checked before it goes; nil: not
    /// checked, ``RunProofs``), and its certificate goes with its own runs.
    let signer: (any WriteSigner)?
    let budgetBytes: Int
    var limit: Int
    /// Where the look for fields whose versions left the index stands: it starts at the change
    /// stamp read before the stream's vector.
    var superseded: SupersededCursor
    /// How many of the walk's next nodes a read tells the store before it asks
    /// (``DeltaReads/prefetchVersionRows(_:)``): a live delta of a relay lacks a few rows of each
    /// of some dozens of writers.
    static let prefetchedNodes = 64

    /// The next batch, or nil when the peer has everything.
    ///
    /// - Parameter peerHolds: what the receiver is known to hold now, beyond what the stream was
    ///   planned against (its batches to this replica): a replaced field it holds whole is not
    ///   sent back to it.
    public mutating func next(peerHolds: VersionVector = VersionVector()) throws(StoreError) -> DeltaBatch? {
        var holds = receiver
        holds.join(peerHolds)
        var walkLimit = limit
        while true {
            var trial = planner
            switch try read(&trial, walkLimit: walkLimit, holds: holds) {
            case .finished:
                planner = trial
                return nil
            case .retry(let smaller):
                walkLimit = smaller
                continue
            case .broken(let broken):
                // Nothing left to abandon (the index is damaged too): end the stream here.
                guard try abandon(broken) else { return nil }
                continue
            case .tooLarge(let keys):
                self.limit = max(1, keys / 2)
                walkLimit = self.limit
                continue
            case let .batch(covers, next, changes, proofs):
                superseded = next
                // Grow back towards the full batch size after a heavy stretch.
                self.limit = min(planner.maxUpdates, limit * 2)
                guard let covers else {
                    // Replaced fields first; the walk waits, as it may not claim past them.
                    if changes.isEmpty { continue }
                    var batch = DeltaBatch(updates: changes, covers: VersionVector(), base: deltaBase)
                    batch.proofs = proofs
                    return batch
                }
                planner = trial
                var batch = DeltaBatch(updates: changes, covers: covers, base: deltaBase)
                batch.proofs = proofs
                return batch
            }
        }
    }

    /// The walk's next stretch (at most `walkLimit` keys) and the replaced fields, with their
    /// states and the proofs of their versions (``RunProofs``), in one read transaction: the look
    /// sees at least what the walk's rows saw, so every version missing from them is accounted
    /// for (and a live change's batch costs one transaction, not two).
    private func read(_ trial: inout DeltaPlanner, walkLimit: Int, holds: VersionVector) throws(StoreError) -> Read {
        let (store, cursor, limit) = (self.store, superseded, self.limit)
        return try store.readDelta { db -> Read in
            try db.prefetchVersionRows(trial.upcoming(Self.prefetchedNodes))
            let plan = try trial.nextBatch(
                limit: walkLimit,
                versions: { node, after, limit in try db.versionRows(node: node, after: after, limit: limit) },
                runs: { node, counter in try db.signedRunRange(of: node, containing: counter) }
            )
            // The walk's claims are made: nothing later can make them untrue.
            guard let plan else { return .finished }
            let look = try db.superseded(after: cursor, limit: limit)
            let walked = Set(plan.keys)
            let replaced = look.keys.filter { !walked.contains($0) }
            // (The walk alone may take more than the limit: one write's fields travel together.)
            let fits = replaced.isEmpty || plan.keys.count + replaced.count <= limit
            // Both fit once the walk takes fewer (unless one write of the walk is that large).
            if look.complete, !fits, replaced.count < limit, limit - replaced.count < walkLimit {
                return .retry(walkLimit: limit - replaced.count)
            }
            let walks = look.complete && fits
            let keys = walks ? plan.keys + replaced : replaced
            let (updates, bytes, broken) = try db.sizedFieldUpdates(keys)
            if !broken.isEmpty { return .broken(broken) }
            if bytes > budgetBytes, keys.count > 1 { return .tooLarge(keys: keys.count) }
            let changes = self.changes(updates, walked: walks ? walked : [], holds: holds)
            let signed = changes.contains { !$0.change.versions.isEmpty }
            return .batch(
                covers: walks ? plan.covers : nil,
                next: look.next,
                changes: changes,
                proofs: signed ? try RunProofs.build(for: changes, reads: db, signer: signer) : []
            )
        }
    }

    /// A state that does not decode is never sent, and the batch must not claim it: stops
    /// streaming the nodes whose writes it holds (their covers stay below it, so the peer gets
    /// those from someone else), so the batch is planned again without it. False if there was no
    /// node left to stop.
    private mutating func abandon(_ broken: [FieldKey]) throws(StoreError) -> Bool {
        store.noteBroken(broken)
        var abandoned = false
        for key in broken {
            for node in try store.indexedNodes(of: key) where planner.abandon(node) { abandoned = true }
        }
        return abandoned
    }

    /// The changes to send of the states read: each only if the receiver may lack it (or it is
    /// the walk's and this stream spreads what only this replica holds), as a delta from the base.
    private func changes(_ updates: [FieldUpdate], walked: Set<FieldKey>, holds: VersionVector) -> [FieldUpdate] {
        updates.compactMap { update -> FieldUpdate? in
            guard case .state(let state) = update.change else { return update }
            let spread = spreadsUnclaimed && walked.contains(update.key)
            guard spread || needsSending(state, holds: holds) else { return nil }
            return FieldUpdate(key: update.key, change: state.change(since: deltaBase))
        }
    }

    /// What one read transaction of ``next(peerHolds:)`` found.
    private enum Read {
        /// The walk is over.
        case finished
        /// The walk and the replaced fields fit together with a shorter walk.
        case retry(walkLimit: Int)
        /// States of these fields did not decode.
        case broken([FieldKey])
        /// The states of this many fields are over the byte budget: fewer at a time.
        case tooLarge(keys: Int)
        /// A batch: the walk's claims when it goes (nil while replaced fields come first), where
        /// the look got to, the changes to send and their proofs.
        case batch(covers: VersionVector?, next: SupersededCursor, changes: [FieldUpdate], proofs: [RunProof])
    }
}

extension DeltaStream {
    /// True if `state` has seen a write in the range this stream claims (beyond what the receiver
    /// held, up to the sender's vector) that the receiver is not known to hold. A field's context
    /// is dense per node (a node's write to a field has seen its earlier ones), so its counter for
    /// a node bounds the writes of that node it reflects. Every field the walk finds qualifies,
    /// unless the receiver has since got its writes; a field that does not qualify reflects
    /// nothing the stream's claims need, and the receiver lacks nothing of it that it claims.
    func needsSending(_ state: FieldState, holds: VersionVector) -> Bool {
        state.context.nodes.contains { node in min(state.context[node], claimable[node]) > holds[node] }
    }
}

/// A position in the look for fields whose versions left the version index: the change stamp of
/// the transaction that replaced them, then the field's row, so a look goes on where it stopped.
public struct SupersededCursor: Sendable, Equatable {
    /// The change stamp of the transaction that replaced the field's versions.
    public var stamp: UInt64
    /// The field's row.
    public var field: Int64

    public init(stamp: UInt64, field: Int64) {
        self.stamp = stamp
        self.field = field
    }
}

extension DeltaStream {
    /// Starts the delta of `store` for a peer that announced `remote`. With `unclaimed` (a
    /// session's first delta), it also sends everything the replica holds beyond its own vector,
    /// uncovered; without, only what its claims need. Every store's streams start here.
    public static func start(
        from store: any DeltaReading,
        for remote: VersionVector,
        maxUpdates: Int,
        budgetBytes: Int,
        unclaimed: Bool,
        deltaBase: VersionVector?,
        signer: (any WriteSigner)? = nil
    ) throws(StoreError) -> DeltaStream {
        // One read: a version replaced after the stamp may be one the vector claims. With nothing
        // to claim, a later delta needs nothing held beyond the vector.
        let (stamp, sender, beyond) = try store.streamStart { vector in unclaimed || !remote.covers(vector) }
        return DeltaStream(
            store: store,
            planner: DeltaPlanner(sender: sender, receiver: remote, maxUpdates: maxUpdates, unclaimed: beyond),
            receiver: remote,
            claimable: sender,
            spreadsUnclaimed: unclaimed,
            deltaBase: deltaBase,
            signer: signer,
            budgetBytes: budgetBytes,
            limit: maxUpdates,
            superseded: SupersededCursor(stamp: stamp, field: .max)
        )
    }
}

extension DeltaStream {
    /// How many field states the receiver lacks, as ``ReplicaStorage/lacking(_:cap:)`` counts them,
    /// against the vector the stream was planned with (no second read of it): the size a delta
    /// announces when it was not read whole at once.
    public func lacking(cap: Int) throws(StoreError) -> Int {
        let (local, remote) = (claimable, receiver)
        return try store.readDelta { db in try db.lacking(local: local, remote: remote, cap: cap) }
    }
}

extension DeltaStream: DeltaSource {}
