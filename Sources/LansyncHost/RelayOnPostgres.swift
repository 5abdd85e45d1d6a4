import Foundation
import LansyncCore
import LansyncNode
import LansyncPostgres
import LansyncReplica
import LansyncStore
import LansyncTransport
import Logging
import ServiceLifecycle

/// A relay whose replica lives in PostgreSQL (`lansync relay --store postgres://…`, Docs/RELAY.md,
/// "One replica, several relay processes"): any number of relay processes, each running a copy of
/// one relay's data directory, serve sessions over one replica in one schema.
///
/// The copies share the relay's identity on purpose (its certificate, its node id): to the
/// cluster they are one relay at several addresses, so nodes given them all fail over from one to
/// the next. Dots stay unique: every write takes the replica's write lock on the server, and the
/// writer's continuity is proven by the server (``PostgresReplica``). The data directory's own
/// SQLite replica gives the identity only; it is never written by such a relay.
extension DataDirectory {
    /// Where the directory records that its relay's replica is in PostgreSQL: from then on its
    /// SQLite file is not the replica, and ``open(_:)`` refuses it (every command but `status`,
    /// which asks the running relay) rather than give its stale content or take a new identity
    /// for a copy (copies share the relay's identity by design).
    var relayStorePath: String { path + "/relay-store" }

    /// True when this directory's relay keeps its replica in PostgreSQL (``relayStorePath``).
    public var keepsReplicaInPostgres: Bool { FileManager.default.fileExists(atPath: relayStorePath) }

    /// Refuses a command that would read or write this directory's SQLite file as if it were the
    /// replica (open, repair, restore) when its relay keeps the replica in PostgreSQL.
    func refuseIfReplicaInPostgres() throws {
        guard keepsReplicaInPostgres else { return }
        throw HostError(
            "\(path) is a relay whose replica is in PostgreSQL ('lansync relay --store'): its SQLite file is not the replica, so this command would read or write the wrong one; run it on a node of the cluster ('lansync status' asks the running relay), or remove \(relayStorePath) to run this directory on its SQLite file again"
        )
    }

    /// The PostgreSQL schema of a cluster's relay replica: `lansync_` and the cluster id (several
    /// clusters may share a database).
    static func relaySchema(cluster: NodeID) -> String { "lansync_" + cluster.text }

    /// Opens this relay's replica in PostgreSQL at `location`, making it from the directory's
    /// identity if no relay process made it yet (a new writer: the node's earlier writes were
    /// under writers of its SQLite replica, whose counters the new replica does not know).
    /// Refused if the schema holds another node's replica.
    func openRelayReplica(at location: PostgresLocation, logger: Logger) throws -> PostgresReplica {
        let me = try ReplicaStore.open(path: replicaPath, connections: .one).info()
        let schema = Self.relaySchema(cluster: me.clusterID)
        let replica: PostgresReplica
        do {
            replica = try PostgresReplica.open(at: location, schema: schema, logger: logger)
        } catch StoreError.notInitialised {
            do {
                replica = try PostgresReplica.create(
                    at: location,
                    schema: schema,
                    nodeID: me.nodeID,
                    clusterID: me.clusterID,
                    nodeName: me.nodeName,
                    fingerprint: me.fingerprint,
                    writer: NodeID.writer(for: me.nodeID),
                    historyLimit: me.historyLimit,
                    logger: logger
                )
                logger.notice("made the relay's replica in PostgreSQL at \(location), schema \(schema)")
            } catch StoreError.alreadyInitialised {
                // Another relay process made it meanwhile.
                replica = try PostgresReplica.open(at: location, schema: schema, logger: logger)
            }
        }
        let held = try replica.info()
        guard held.nodeID == me.nodeID, held.clusterID == me.clusterID else {
            replica.close()
            throw HostError(
                "schema \(schema) at \(location) holds the replica of relay \(held.nodeID.short) (\(held.nodeName)), and this directory is node \(me.nodeID.short): every relay process on one replica runs a copy of one relay's data directory (Docs/RELAY.md)"
            )
        }
        let recorded = (try? String(contentsOfFile: relayStorePath, encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if let recorded, recorded != "\(location)" {
            logger.warning(
                "this relay kept its replica at \(recorded) before, and now uses \(location): a different database holds a different replica under the same node id, so the nodes take it as one that rolled back; give every relay process one database"
            )
        }
        if recorded != "\(location)" {
            try Data("\(location)\n".utf8).write(to: URL(fileURLWithPath: relayStorePath))
        }
        let nodePath = nodePath
        let cluster = me.clusterID
        replica.signing.use(loading: { MemberWriteSigner.load(nodePEM: nodePath, cluster: cluster) })
        return replica
    }

    /// Runs this directory's relay over its replica in PostgreSQL until SIGINT or SIGTERM.
    func runRelay(
        onPostgres location: PostgresLocation,
        options: NodeOptions,
        logger: Logger
    ) async throws {
        MemoryPolicy.apply()
        let lock = try NodeLock(directory: self)
        defer { lock.release() }
        for change in tightenPermissions() { logger.notice("made the data directory private: \(change)") }
        let replica = try openRelayReplica(at: location, logger: logger)
        defer { replica.close() }
        var options = options
        options.controlSocketPath = controlSocketPath
        options.admitting = try admittingAuthority()
        options.retireAuthority = { [self] in try dropAuthorityKey() }
        let node = try Node(options: options, store: replica, identity: try tlsIdentity(), logger: logger)
        let group = NodeServices.group(node, alongside: [], logger: logger)
        let signals = Self.stopOnSignals(logger: logger, socket: controlSocketPath)
        defer { signals.forEach { $0.cancel() } }
        do {
            try await group.run()
        } catch {
            throw HostError("relay stopped: \(TransportError.describing(error))")
        }
    }
}
