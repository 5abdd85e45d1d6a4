import LansyncCore
import LansyncStore
import LansyncTestSupport

/// The stores the shared store suites run against: every implementation of ``ReplicaStorage``
/// must show exactly what the merge core's model shows, through the protocol the node uses.
///
/// A suite takes `StorageKind.all` as an argument and makes its replicas with ``replica(_:in:)``;
/// a new store (issue 34's PostgreSQL replica) joins every shared suite by joining `all`.
enum StorageKind: String, CaseIterable, CustomStringConvertible, Sendable {
    /// ``ReplicaStore``: one SQLite file per replica.
    case sqlite

    static let all = allCases

    var description: String { rawValue }

    /// Replica `node` of cluster 99 (named `r<node>`), made in `dir`.
    func replica(_ node: UInt64, in dir: String) throws -> any ReplicaStorage {
        switch self {
        case .sqlite:
            try ReplicaStore.create(
                path: "\(dir)/r\(node).sqlite",
                nodeID: .node(node),
                clusterID: .node(99),
                nodeName: "r\(node)",
                fingerprint: "test",
                lease: WriterLease(directory: dir)
            )
        }
    }
}

/// A session's exchange as the node runs it, through the protocol: `to` meets `from`'s writer,
/// receives `from`'s delta for what `to` holds as `from`'s stream, batch by batch, and completes
/// the stream.
func syncAsASession(
    _ from: any ReplicaStorage,
    _ to: any ReplicaStorage,
    batchSize: Int,
    deltas: Bool,
    wallMilliseconds: UInt64
) throws {
    let sender = try from.info()
    let held = try to.sessionStart(with: sender.nodeID).vector
    try to.meet(sender.nodeID, incarnation: sender.writerID)
    var stream = try from.deltaStream(
        for: held,
        maxUpdates: batchSize,
        budgetBytes: 2 << 20,
        unclaimed: true,
        deltaBase: deltas ? held : nil
    )
    while let batch = try stream.next(peerHolds: VersionVector()) {
        try to.receive(
            batch,
            from: sender.nodeID,
            incarnation: sender.writerID,
            wallMilliseconds: wallMilliseconds,
            refuse: nil,
            revoked: RevokedWriters(),
            writers: .standard,
            allowance: nil,
            rejoinedAt: nil,
            completingStream: false
        )
    }
    try to.completeStream(from: sender.nodeID, rejoinedAt: nil)
}
