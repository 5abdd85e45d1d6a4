import Foundation
import LansyncCore
import LansyncPostgres
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Logging
import Synchronization

/// The stores the shared store suites run against: every implementation of ``ReplicaStorage``
/// must show exactly what the merge core's model shows, through the protocol the node uses.
///
/// A suite takes `StorageKind.all` as an argument and makes its replicas in a ``StorageSite``;
/// a new store joins every shared suite by joining `all`.
enum StorageKind: String, CaseIterable, CustomStringConvertible, Sendable {
    /// ``ReplicaStore``: one SQLite file per replica.
    case sqlite
    /// ``PostgresReplica``: one schema per replica, on a real PostgreSQL server the test process
    /// shares (``TemporaryPostgres/shared()``).
    case postgres

    static let all = allCases

    var description: String { rawValue }
}

/// Where one test's replicas of one kind live: a temporary directory, and for PostgreSQL the test
/// process's shared server (``TemporaryPostgres/shared()``), each replica a schema of it named for
/// this site alone. ``close()`` closes the replicas and removes the directory.
final class StorageSite {
    let kind: StorageKind
    let dir: String
    private let server: TemporaryPostgres?
    /// Names this site's schemas apart from every other site's on the shared server.
    private let prefix: String
    private var made = 0
    private var opened: [PostgresReplica] = []

    init(_ kind: StorageKind, _ label: String) throws {
        self.kind = kind
        dir = makeTemporaryDirectory(label)
        server = kind == .postgres ? try TemporaryPostgres.shared() : nil
        prefix = "s\(Self.sites.add(1, ordering: .relaxed).newValue)"
    }

    /// A new replica of node `node` in cluster 99 (named `r<node>`), apart from every other the
    /// site made (its own file or schema, and its own writer markers).
    func replica(_ node: UInt64) throws -> any ReplicaStorage {
        made += 1
        switch kind {
        case .sqlite:
            let leases = "\(dir)/lease-\(made)"
            try FileManager.default.createDirectory(atPath: leases, withIntermediateDirectories: true)
            return try ReplicaStore.create(
                path: "\(dir)/r\(node)-\(made).sqlite",
                nodeID: .node(node),
                clusterID: .node(99),
                nodeName: "r\(node)",
                fingerprint: "test",
                lease: WriterLease(directory: leases)
            )
        case .postgres:
            guard let server else { preconditionFailure("a PostgreSQL site has a server") }
            let replica = try PostgresReplica.create(
                at: try PostgresLocation(parsing: server.uri),
                schema: "\(prefix)_r\(node)_\(made)",
                nodeID: .node(node),
                clusterID: .node(99),
                nodeName: "r\(node)",
                fingerprint: "test",
                logger: Logger(label: "test")
            )
            opened.append(replica)
            return replica
        }
    }

    /// Closes the PostgreSQL replicas made so far (their connections: a server takes 100).
    func closeReplicas() {
        for replica in opened { replica.close() }
        opened = []
    }

    private static let sites = Atomic<Int>(0)

    func close() {
        closeReplicas()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// A session's exchange as the node runs it, through the protocol: `to` meets `from`'s writer,
/// receives `from`'s delta for what `to` holds as `from`'s stream, batch by batch, and completes
/// the stream. With `check`, each batch's proofs are checked first and only those that hold go
/// with it, as the session's receive path does (``RunCheck``).
func syncAsASession(
    _ from: any ReplicaStorage,
    _ to: any ReplicaStorage,
    batchSize: Int,
    deltas: Bool,
    wallMilliseconds: UInt64,
    revoked: RevokedWriters = RevokedWriters(),
    check: RunCheck? = nil
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
    while var batch = try stream.next(peerHolds: VersionVector()) {
        if let check { batch.proofs = check.check(batch).held }
        try to.receive(
            batch,
            from: sender.nodeID,
            incarnation: sender.writerID,
            wallMilliseconds: wallMilliseconds,
            refuse: nil,
            revoked: revoked,
            writers: .standard,
            allowance: nil,
            rejoinedAt: nil,
            completingStream: false
        )
    }
    try to.completeStream(from: sender.nodeID, rejoinedAt: nil)
}
