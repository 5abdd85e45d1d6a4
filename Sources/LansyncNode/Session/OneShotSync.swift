import LansyncCore
import LansyncIdentity
public import LansyncReplica
public import LansyncTransport
import LansyncWire
import NIOCore
import NIOPosix

/// `lansync sync`: connects to each peer, exchanges everything both ways, and reports.
public enum OneShotSync {
    /// How the exchange with one peer went.
    public struct Result: Sendable {
        public let peer: PeerAddress
        public let outcome: SessionOutcome?
        public let error: String?

        public var succeeded: Bool { error == nil && outcome?.reachedUpToDate == true }
    }

    /// - Parameter progress: told, as a session goes on, how far the exchange with a peer has got.
    public static func run(
        store: any ReplicaStorage,
        identity: TLSIdentity,
        peers: [PeerAddress],
        timeout: Duration,
        progress: @escaping @Sendable (PeerAddress, SessionObserver.Progress) -> Void = { _, _ in }
    ) async throws -> [Result] {
        let writer = try store.renewWriterIfUnproven()
        // As a node's start does: the writes this replica made before it could sign go signed
        // (once; a meta read after). If that fails they go unsigned, as they would have.
        _ = try? store.signHeldOwnWrites()
        let info = try store.info()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let io = BlockingIO()
        let transport = try Transport(identity: identity, group: group)
        // Revocations count here as in a node: a revoked peer gets nothing, and the statements
        // travel both ways in the hellos.
        let statements = ClusterStatements(store: store, io: io, trust: identity.trust, own: info.nodeID)
        await statements.overruleRevokedWrites(news: await statements.reload())
        let sync = Exchange(
            store: store,
            io: io,
            hub: ChangeHub(),
            statements: statements,
            info: info,
            writer: writer,
            progress: progress
        )
        var results: [Result] = []
        for peer in peers {
            let result: Result = await withTaskGroup(of: Result?.self) { group in
                group.addTask { await sync.run(with: peer, transport: transport) }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return Task.isCancelled
                        ? nil : Result(peer: peer, outcome: nil, error: "timed out after \(timeout)")
                }
                let first = await group.next()!!
                group.cancelAll()
                return first
            }
            results.append(result)
        }
        await io.shutdown()
        try? await group.shutdownGracefully()
        return results
    }

    /// One peer's exchange: what every session of the sync shares.
    private struct Exchange: Sendable {
        let store: any ReplicaStorage
        let io: BlockingIO
        let hub: ChangeHub
        let statements: ClusterStatements
        let info: ReplicaInfo
        let writer: NodeID
        let progress: @Sendable (PeerAddress, SessionObserver.Progress) -> Void

        /// Connects to `peer` and runs one session to its end (a revoked peer gets nothing).
        func run(with peer: PeerAddress, transport: Transport) async -> Result {
            let connection: PeerConnection
            do { connection = try await transport.connect(host: peer.host, port: peer.port) } catch {
                return Result(peer: peer, outcome: nil, error: "cannot connect: \(error)")
            }
            if let revoked = statements.revocation(of: connection.peerNodeID) {
                try? await connection.channel.channel.close()
                return Result(
                    peer: peer,
                    outcome: nil,
                    error:
                        "revoked: \(revoked.name.isEmpty ? "the peer" : revoked.name) (\(revoked.node.short)) was revoked by the cluster's authority at \(WallClock.iso8601(milliseconds: revoked.at)); nothing was exchanged"
                )
            }
            let outcome = await session(with: peer, over: connection)
            if let hello = outcome.peer, outcome.reachedUpToDate {
                try? store.savePeer(
                    PeerRecord(
                        nodeID: hello.nodeID,
                        name: hello.name,
                        address: peer.description,
                        source: .configured,
                        lastSync: WallClock.milliseconds,
                        versionVector: outcome.peerHolds
                    )
                )
            }
            return Result(
                peer: peer,
                outcome: outcome,
                error: outcome.reachedUpToDate
                    ? nil : (outcome.failure ?? "the session ended before both sides were up to date")
            )
        }

        private func session(with peer: PeerAddress, over connection: PeerConnection) async -> SessionOutcome {
            var config = SessionMachine.SessionConfig(
                nodeID: info.nodeID,
                clusterID: info.clusterID,
                role: .oneShot,
                name: info.nodeName,
                authenticatedPeer: connection.peerNodeID,
                writer: writer
            )
            config.statements = statements.records
            var observer = SessionObserver()
            let progress = self.progress
            let statements = self.statements
            observer.progress = { progress(peer, $0) }
            observer.peerReady = { hello in
                await statements.overruleRevokedWrites(news: await statements.learn(hello.statements))
                return nil
            }
            return await SessionRunner(
                store: store,
                io: io,
                hub: hub,
                config: config,
                certify: statements.certify,
                observer: observer,
                // Limits hold on arrival for a one-shot sync as for the node.
                refuse: RelayLimits.standard.refusal,
                revoked: { statements.revokedWriters }
            )
            .run(connection)
        }
    }
}
