import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import LansyncTransport
import LansyncWire
import NIOConcurrencyHelpers
import Testing

@testable import LansyncNode

/// Two session drivers against two real replica files, their messages passed in memory: the
/// runner's side of the protocol (batches applied in transactions, streams completed, deltas read
/// from the store) with no socket.
@Suite struct SessionRunnerTests {
    /// A replica file in a temporary directory, with its own writer marker directory.
    static func store(_ dir: String, _ name: String, node: NodeID, cluster: NodeID) throws -> ReplicaStore {
        try ReplicaStore.create(
            path: "\(dir)/\(name).sqlite",
            nodeID: node,
            clusterID: cluster,
            nodeName: name,
            fingerprint: name,
            lease: WriterLease(directory: "\(dir)/\(name)-lease")
        )
    }

    /// Runs one one-shot session between `a` and `b` to its end; returns both outcomes.
    /// `hubs`: each side's change hub; `sent`: sees every message a sends.
    static func session(
        _ a: (store: ReplicaStore, node: NodeID),
        _ b: (store: ReplicaStore, node: NodeID),
        cluster: NodeID,
        hubs: (ChangeHub, ChangeHub) = (ChangeHub(), ChangeHub()),
        sent: @escaping @Sendable (Message) -> Void = { _ in }
    ) async throws -> [SessionOutcome] {
        let (toA, intoA) = AsyncStream<SessionDriver.Input>.makeStream()
        let (toB, intoB) = AsyncStream<SessionDriver.Input>.makeStream()
        func driver(
            _ me: (store: ReplicaStore, node: NodeID),
            _ peer: NodeID,
            hub: ChangeHub,
            sendingTo other: AsyncStream<SessionDriver.Input>.Continuation,
            tap: @escaping @Sendable (Message) -> Void = { _ in }
        ) -> SessionDriver {
            var config = SessionMachine.SessionConfig(
                nodeID: me.node,
                clusterID: cluster,
                role: .oneShot,
                name: "n",
                authenticatedPeer: peer
            )
            config.window = 2
            // These replicas sign nothing: no run comes, and no key is a member's.
            let runner = SessionRunner(
                store: me.store,
                io: BlockingIO(threads: 1),
                hub: hub,
                config: config,
                certify: { _, _ in false }
            )
            return SessionDriver(runner: runner, subscription: 0, wire: WireCounters()) { message in
                tap(message)
                other.yield(.event(.received(message, now: .now)))
            }
        }
        var da = driver(a, b.node, hub: hubs.0, sendingTo: intoB, tap: sent)
        var db = driver(b, a.node, hub: hubs.1, sendingTo: intoA)
        async let ranA: SessionOutcome = {
            try await da.run(toA)
            intoB.yield(.peerClosed)
            return da.result
        }()
        async let ranB: SessionOutcome = {
            try await db.run(toB)
            intoA.yield(.peerClosed)
            return db.result
        }()
        return [try await ranA, try await ranB]
    }

    @Test func twoReplicasExchangeEverythingAndConverge() async throws {
        let dir = makeTemporaryDirectory("runner")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cluster = NodeID.node(900)
        let (na, nb) = (NodeID.node(1), NodeID.node(2))
        let a = try Self.store(dir, "a", node: na, cluster: cluster)
        let b = try Self.store(dir, "b", node: nb, cluster: cluster)
        // Enough on each side for several batches each way, and one field both changed.
        try a.apply(
            (0..<1200).map {
                (ItemID.named("a\($0)"), .create(type: "t", assignments: [.set(.named("v"), .integer(Int64($0)))]))
            },
            wallMilliseconds: 1_700_000_000_000
        )
        try b.apply(
            (0..<700).map {
                (ItemID.named("b\($0)"), .create(type: "t", assignments: [.set(.named("v"), .integer(Int64($0)))]))
            },
            wallMilliseconds: 1_700_000_000_000
        )
        try a.apply(
            .create(type: "t", assignments: [.set(.named("w"), .string("from a"))]),
            to: .named("both"),
            wallMilliseconds: 1_700_000_000_001
        )
        try b.apply(
            .create(type: "t", assignments: [.set(.named("w"), .string("from b"))]),
            to: .named("both"),
            wallMilliseconds: 1_700_000_000_002
        )

        let outcomes = try await Self.session((a, na), (b, nb), cluster: cluster)
        for outcome in outcomes {
            #expect(outcome.reachedUpToDate && outcome.failure == nil, "\(outcome.failure ?? "-")")
        }
        #expect(outcomes[0].counters.sentUpdates >= 1200 && outcomes[0].counters.receivedUpdates >= 700)
        #expect(try ReplicaDigest.compute(a) == ReplicaDigest.compute(b), "the replicas differ after the session")
        #expect(try a.versionVector() == b.versionVector())
        #expect(try a.storedItem(.named("b699"))?.value(of: .named("v")) == .integer(699))
        #expect(try a.conflicts().map(\.item) == [.named("both")], "the concurrent edit is kept visible")

        // A second session finds nothing to send either way.
        let again = try await Self.session((a, na), (b, nb), cluster: cluster)
        #expect(again.allSatisfy { $0.counters.sentUpdates == 0 && $0.reachedUpToDate })
    }

    /// Protocol 1.11 through the driver: every batch a sends says how many sessions its changes
    /// crossed (0: a's own), and b, for which a's first delta is a catch-up, records them as made
    /// where they landed: what it passes on next says 0 too.
    @Test func batchesSayTheirHopsAndACatchUpCountsAsMadeWhereItLands() async throws {
        let dir = makeTemporaryDirectory("runner-hops")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cluster = NodeID.node(900)
        let (na, nb) = (NodeID.node(1), NodeID.node(2))
        let a = try Self.store(dir, "a", node: na, cluster: cluster)
        let b = try Self.store(dir, "b", node: nb, cluster: cluster)
        try a.apply(
            .create(type: "t", assignments: [.set(.named("v"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: 1_700_000_000_000
        )
        try b.apply(
            .create(type: "t", assignments: [.set(.named("v"), .integer(2))]),
            to: .named("y"),
            wallMilliseconds: 1_700_000_000_000
        )
        let writer = try a.info().writerID
        let (hubA, hubB) = (ChangeHub(), ChangeHub())
        hubA.setWriter(writer)
        #expect(hubB.hops(of: VersionVector([writer: 1])) == nil, "b knows nothing of a's changes yet")
        let stamps = NIOLockedValueBox<[UInt8?]>([])
        let outcomes = try await Self.session((a, na), (b, nb), cluster: cluster, hubs: (hubA, hubB)) { message in
            if message.isBatch { stamps.withLockedValue { $0.append(message.hops) } }
        }
        let upToDate = outcomes.map(\.reachedUpToDate)
        #expect(upToDate == [true, true], "\(outcomes.map { $0.failure ?? "-" })")
        let arrived = try b.storedItem(.named("x"))?.value(of: .named("v"))
        #expect(arrived == .integer(1))
        let told = stamps.withLockedValue { $0 }
        #expect(!told.isEmpty && told.allSatisfy { $0 == 0 }, "a's own changes, 0 hops: \(told)")
        #expect(hubB.hops(of: VersionVector([writer: 1])) == 0, "a catch-up spreads from b as if made there")
    }
}
