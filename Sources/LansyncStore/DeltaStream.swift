public import LansyncCore

/// The batches a replica sends to a peer whose version vector is known: ``DeltaPlanner`` driven
/// by the store's version index, reading each batch's field states when it is asked for.
public struct DeltaStream {
    let store: ReplicaStore
    var planner: DeltaPlanner

    /// The next batch, or nil when the peer has everything.
    public mutating func next() throws(StoreError) -> DeltaBatch? {
        let store = self.store
        let plan: (keys: [FieldKey], covers: VersionVector)?
        do {
            plan = try planner.nextBatch { node, after, limit in try store.versionRows(node: node, after: after, limit: limit) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io("\(error)")
        }
        guard let plan else { return nil }
        return DeltaBatch(updates: try store.fieldUpdates(plan.keys), covers: plan.covers)
    }
}

extension ReplicaStore {
    /// Starts the delta for a peer that announced `remote`.
    public func deltaStream(for remote: VersionVector, maxUpdates: Int = 512) throws(StoreError) -> DeltaStream {
        DeltaStream(store: self, planner: DeltaPlanner(sender: try versionVector(), receiver: remote, maxUpdates: maxUpdates))
    }
}
