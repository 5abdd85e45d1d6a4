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
public struct DeltaStream: Sendable {
    let store: ReplicaStore
    var planner: DeltaPlanner
    let deltaBase: VersionVector?
    let budgetBytes: Int
    var limit: Int

    /// The next batch, or nil when the peer has everything.
    public mutating func next() throws(StoreError) -> DeltaBatch? {
        let store = self.store
        while true {
            var trial = planner
            let plan: (keys: [FieldKey], covers: VersionVector)?
            do {
                plan = try trial.nextBatch(limit: limit) { node, after, limit in
                    try store.versionRows(node: node, after: after, limit: limit)
                }
            } catch let error as StoreError {
                throw error
            } catch {
                throw .io("\(error)")
            }
            guard let plan else {
                planner = trial
                return nil
            }
            let (updates, bytes, broken) = try store.sizedFieldUpdates(plan.keys)
            if !broken.isEmpty {
                // A state that does not decode is never sent, and the batch must not claim it: stop
                // streaming the nodes whose writes it holds (their covers stay below it, so the peer
                // gets those from someone else) and plan the batch again without it.
                var abandoned = false
                for key in broken {
                    for node in try store.indexedNodes(of: key) where planner.abandon(node) { abandoned = true }
                }
                // Nothing left to abandon (the index is damaged too): end the stream here.
                guard abandoned else { return nil }
                continue
            }
            if bytes > budgetBytes, plan.keys.count > 1 {
                limit = max(1, plan.keys.count / 2)
                continue
            }
            planner = trial
            // Grow back towards the full batch size after a heavy stretch.
            limit = min(planner.maxUpdates, limit * 2)
            let changes = updates.map { update -> FieldUpdate in
                guard case .state(let state) = update.change else { return update }
                return FieldUpdate(key: update.key, change: state.change(since: deltaBase))
            }
            return DeltaBatch(updates: changes, covers: plan.covers, base: deltaBase)
        }
    }
}

extension ReplicaStore {
    /// Starts the delta for a peer that announced `remote`; with `unclaimed`, it ends with what this
    /// replica holds beyond its own vector, uncovered (a session's first delta).
    public func deltaStream(
        for remote: VersionVector,
        maxUpdates: Int = 512,
        budgetBytes: Int = 2 << 20,
        unclaimed: Bool = true,
        deltaBase: VersionVector? = nil
    ) throws(StoreError) -> DeltaStream {
        DeltaStream(
            store: self,
            planner: DeltaPlanner(
                sender: try versionVector(),
                receiver: remote,
                maxUpdates: maxUpdates,
                unclaimed: unclaimed ? try unclaimedNodes() : []
            ),
            deltaBase: deltaBase,
            budgetBytes: budgetBytes,
            limit: maxUpdates
        )
    }
}
