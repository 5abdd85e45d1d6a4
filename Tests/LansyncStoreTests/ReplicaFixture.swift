import LansyncCore
import LansyncTestSupport

@testable import LansyncReplica
@testable import LansyncStore

/// What the store's multi-replica suites share: replicas of one cluster made in the suite's own
/// temporary directory (one writer lease for all), and a sync between two of them as a session
/// runs it (a delta stream against what the receiver holds, in small batches).
protocol ReplicaFixture {
    var dir: String { get }
    /// The wall clock the suite's edits and merges are made at.
    var t0: UInt64 { get }
    /// Field states per batch of a sync.
    var batchSize: Int { get }
}

extension ReplicaFixture {
    var t0: UInt64 { 1_700_000_000_000 }
    var batchSize: Int { 10 }
    var lease: WriterLease { WriterLease(directory: dir) }

    /// Replica `node` (file `r<node>.sqlite`, named `n<node>`) of cluster 99.
    func replica(_ node: UInt64, lease: WriterLease? = nil) throws -> ReplicaStore {
        try ReplicaStore.create(
            path: "\(dir)/r\(node).sqlite",
            nodeID: .node(node),
            clusterID: .node(99),
            nodeName: "n\(node)",
            fingerprint: "fp",
            lease: lease ?? self.lease
        )
    }

    /// Everything `to` lacks of `from`, as deltas against what `to` holds.
    func sync(_ from: ReplicaStore, _ to: ReplicaStore, revoked: RevokedWriters = RevokedWriters()) throws {
        let held = try to.versionVector()
        var stream = try from.deltaStream(for: held, maxUpdates: batchSize, deltaBase: held)
        while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: t0, revoked: revoked) }
    }
}
