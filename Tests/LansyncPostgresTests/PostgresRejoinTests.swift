import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncPostgres

/// A rejoin in PostgreSQL as in the SQLite store: a replica that edited offline while its peer
/// moved on (deleting, editing, creating) keeps aside what only it holds, empties itself, takes
/// the peer's snapshot and re-issues what it kept; a PostgreSQL replica and a SQLite replica that
/// went through the same must show the same at every step.
@Suite(.serialized, .computeBound) struct PostgresRejoinTests {
    static let t0: UInt64 = 1_700_000_000_000

    static func sync(_ from: ReplicaStore, into stores: [any ReplicaBatchTaker], at now: UInt64) throws {
        for store in stores {
            let held = try store.heldVector()
            var stream = try from.deltaStream(for: held, maxUpdates: 5, deltaBase: nil)
            while let batch = try stream.next() { try store.take(batch, at: now) }
        }
    }

    @Test func aRejoinEndsAsInTheSQLiteStore() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-rejoin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var reissued = 0
        for seed in 0..<UInt64(max(4, propertyCases(default: 400) / 60)) {
            var rng = SplitMix64(seed: seed)
            // A directory per seed: the SQLite stores' writer markers are kept beside them, and
            // a store that finds another's marker starts a new writer (the PostgreSQL replica
            // then writes under another id than its twin).
            let dir = "\(dir)/\(seed)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let peer = try PostgresReplicaTests.sqlite(dir, "\(seed)-peer", node: 1)
            let sqlite = try PostgresReplicaTests.sqlite(dir, "\(seed)-away", node: 2)
            let pg = try PostgresReplicaTests.replica(server, schema: "rejoin_\(seed)", node: 2)
            defer { pg.close() }
            var peerModel = Replica(nodeID: .node(1))
            var awayModel = Replica(nodeID: .node(2))
            var now = Self.t0
            // Together first, then apart: each edits on its own.
            for phase in 0..<2 {
                if phase == 1 {
                    // Apart, the away replica creates an item the peer never sees (and may delete
                    // it): re-issued into a snapshot that lacks it, it comes back (deleted, if so).
                    let made = ItemID.named("made\(seed)")
                    let create = ItemEdit.create(
                        type: "note",
                        assignments: [.set(.named("a"), .string("out of sight"))]
                    )
                    _ = try awayModel.apply(create, to: made, wallMilliseconds: now)
                    try sqlite.apply(create, to: made, wallMilliseconds: now)
                    try pg.apply(create, to: made, wallMilliseconds: now)
                    if seed % 2 == 1 {
                        _ = try awayModel.apply(.delete, to: made, wallMilliseconds: now + 1)
                        try sqlite.apply(.delete, to: made, wallMilliseconds: now + 1)
                        try pg.apply(.delete, to: made, wallMilliseconds: now + 1)
                    }
                }
                for _ in 0..<(phase == 0 ? 12 : 20) {
                    now += 5
                    if rng.chance(50) {
                        let (id, edit) = PostgresReplicaTests.randomEdit(peerModel, using: &rng)
                        _ = try? peerModel.apply(edit, to: id, wallMilliseconds: now)
                        _ = try? peer.apply(edit, to: id, wallMilliseconds: now)
                    } else {
                        let (id, edit) = PostgresReplicaTests.randomEdit(awayModel, using: &rng)
                        _ = try? awayModel.apply(edit, to: id, wallMilliseconds: now)
                        _ = try? sqlite.apply(edit, to: id, wallMilliseconds: now)
                        _ = try? pg.apply(edit, to: id, wallMilliseconds: now)
                    }
                    if phase == 0, rng.chance(30) {
                        try Self.sync(peer, into: [sqlite, pg], at: now)
                        for batch in peerModel.delta(for: awayModel.versionVector, maxUpdates: 100) {
                            _ = awayModel.apply(batch, wallMilliseconds: now)
                        }
                        // The peer takes the away replica's writes (from the SQLite one).
                        let held = try peer.versionVector()
                        var stream = try sqlite.deltaStream(for: held, maxUpdates: 5, deltaBase: nil)
                        while let batch = try stream.next() { try peer.apply(batch, wallMilliseconds: now) }
                        for batch in awayModel.delta(for: peerModel.versionVector, maxUpdates: 100) {
                            _ = peerModel.apply(batch, wallMilliseconds: now)
                        }
                    }
                }
            }
            now += 1_000
            #expect(try pg.versionVector() == sqlite.versionVector(), "seed \(seed): twins before the rejoin")
            let vector = try peer.versionVector()
            let reports = [MemberReport(nodeID: .node(1), seen: vector, at: now)]
            let start = try sqlite.rejoin(keepingUnseenBy: vector, adopting: reports, now: now)
            #expect(try pg.rejoin(keepingUnseenBy: vector, adopting: reports, now: now) == start, "seed \(seed)")
            #expect(try pg.hasRejoinPending() == sqlite.hasRejoinPending())
            #expect(try pg.counts() == sqlite.counts())
            #expect(try pg.counts().items == 0, "emptied")
            #expect(try pg.rejoinedAt() == now)
            #expect(try pg.memberReports() == sqlite.memberReports())
            #expect(try pg.writers().last?.reason == .rejoin)
            // The snapshot, then the writes kept aside.
            try Self.sync(peer, into: [sqlite, pg], at: now)
            let outcome = try sqlite.reissueRejoinPending(now: now)
            #expect(try pg.reissueRejoinPending(now: now) == outcome, "seed \(seed)")
            reissued += outcome?.writes ?? 0
            #expect(try pg.hasRejoinPending() == false)
            let expected = try PostgresReplicaTests.items { try sqlite.forEachItem(includeDeleted: true, $0) }
            let got = try PostgresReplicaTests.items {
                try pg.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0)
            }
            #expect(got == expected, "seed \(seed)")
            let made = try pg.itemState(.named("made\(seed)"))
            #expect(made != nil && made?.isDeleted == (seed % 2 == 1), "seed \(seed): the item made out of sight")
            #expect(try pg.conflicts().map(\.values) == sqlite.conflicts().map(\.values), "seed \(seed)")
            #expect(try pg.counts() == sqlite.counts(), "seed \(seed)")
            // What the peer then takes from each brings it to the same items.
            let fromPG = try PostgresReplicaTests.sqlite(dir, "\(seed)-peer-pg", node: 1)
            let fromSQLite = try PostgresReplicaTests.sqlite(dir, "\(seed)-peer-sqlite", node: 1)
            try Self.sync(peer, into: [fromPG, fromSQLite], at: now)
            for (from, to) in [(pg as any DeltaReading, fromPG), (sqlite, fromSQLite)] {
                var stream = try DeltaStream.start(
                    from: from,
                    for: try to.versionVector(),
                    maxUpdates: 5,
                    budgetBytes: 2 << 20,
                    unclaimed: true,
                    deltaBase: nil
                )
                while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: now) }
            }
            #expect(
                try PostgresReplicaTests.items { try fromPG.forEachItem(includeDeleted: true, $0) }
                    == PostgresReplicaTests.items { try fromSQLite.forEachItem(includeDeleted: true, $0) },
                "seed \(seed): the peer after each"
            )
        }
        #expect(reissued > 0, "no write was re-issued")
    }
}

/// A replica a test hands batches to, whichever store keeps it.
protocol ReplicaBatchTaker {
    func heldVector() throws -> VersionVector
    func take(_ batch: DeltaBatch, at now: UInt64) throws
}

extension ReplicaStore: ReplicaBatchTaker {
    func heldVector() throws -> VersionVector { try versionVector() }
    func take(_ batch: DeltaBatch, at now: UInt64) throws { try apply(batch, wallMilliseconds: now) }
}

extension PostgresReplica: ReplicaBatchTaker {
    func heldVector() throws -> VersionVector { try versionVector() }
    func take(_ batch: DeltaBatch, at now: UInt64) throws { try apply(batch, wallMilliseconds: now) }
}
