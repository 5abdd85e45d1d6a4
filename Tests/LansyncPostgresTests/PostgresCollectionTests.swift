import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncPostgres

/// Collection in PostgreSQL as in the SQLite store: two members edit, delete, meet and report
/// while time passes; a PostgreSQL relay and a SQLite relay take the same batches and reports and
/// run the same collection rounds, and must show the same rounds, items, counts, figures,
/// members and frontier at every step: deleted items reduced to their tombstone and later purged,
/// a late concurrent write bringing a collected item back, a write seen before never doing so.
@Suite(.serialized, .computeBound) struct PostgresCollectionTests {
    static let t0: UInt64 = 1_700_000_000_000

    /// The figures both stores count alike (the file's size is each store's own).
    static func comparable(_ figures: CollectionFigures) -> CollectionFigures {
        var figures = figures
        (figures.fileBytes, figures.freeBytes) = (0, 0)
        return figures
    }

    @Test func collectionRoundsEndAsInTheSQLiteStore() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-collect")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = CollectionSettings(trashWindow: 1_000, awayAfter: 6_000)
        var (collected, purged) = (0, 0)
        for seed in 0..<UInt64(max(3, propertyCases(default: 400) / 100)) {
            var rng = SplitMix64(seed: seed)
            let members = [
                try PostgresReplicaTests.sqlite(dir, "\(seed)-a", node: 1),
                try PostgresReplicaTests.sqlite(dir, "\(seed)-b", node: 3),
            ]
            var models = [Replica(nodeID: .node(1)), Replica(nodeID: .node(3))]
            let sqlite = try PostgresReplicaTests.sqlite(dir, "\(seed)-relay", node: 2)
            let pg = try PostgresReplicaTests.replica(server, schema: "collect_\(seed)", node: 2)
            defer { pg.close() }
            try sqlite.setCollectionSettings(settings)
            try pg.setCollectionSettings(settings)
            var now = Self.t0
            for step in 0..<90 {
                now += UInt64.random(in: 0...2_500, using: &rng)
                let who = Int.random(in: 0..<2, using: &rng)
                let member = members[who]
                var what = "edit"
                // After 40 steps the members stop writing: their reports catch up, the frontier
                // passes the deletes, and the relays collect, then purge.
                switch Int.random(in: step < 40 ? 0..<12 : 5..<12, using: &rng) {
                case 0..<4:
                    let (id, edit) = PostgresReplicaTests.randomEdit(models[who], using: &rng)
                    _ = try? models[who].apply(edit, to: id, wallMilliseconds: now)
                    _ = try? member.apply(edit, to: id, wallMilliseconds: now)
                case 4:
                    what = "delete"
                    let live = models[who].items.values.filter { $0.exists && !$0.isDeleted }.map(\.id)
                    guard let id = live.randomElement(using: &rng) else { continue }
                    _ = try? models[who].apply(.delete, to: id, wallMilliseconds: now)
                    _ = try? member.apply(.delete, to: id, wallMilliseconds: now)
                case 5:
                    what = "members meet"
                    let other = 1 - who
                    for batch in models[who].delta(for: models[other].versionVector, maxUpdates: 100) {
                        _ = models[other].apply(batch, wallMilliseconds: now)
                    }
                    let held = try members[other].versionVector()
                    var stream = try member.deltaStream(for: held, maxUpdates: 4, deltaBase: held)
                    while let batch = try stream.next() { try members[other].apply(batch, wallMilliseconds: now) }
                case 6..<9:
                    what = "sync to the relays"
                    // The same batches reach both relays (from what the SQLite one holds), then
                    // the member's report as its session gives it.
                    let held = try sqlite.versionVector()
                    var stream = try member.deltaStream(for: held, maxUpdates: 3, deltaBase: nil)
                    var sent = 0
                    while let batch = try stream.next() {
                        let changed = try sqlite.apply(batch, wallMilliseconds: now)
                        #expect(try pg.apply(batch, wallMilliseconds: now) == changed, "seed \(seed) step \(step)")
                        sent += 1
                    }
                    // With the member's signed report to pass on (protocol 1.13; the stores keep
                    // the bytes as they are, the latest by the member's own time).
                    let report = [
                        MemberReport(
                            nodeID: try member.info().nodeID,
                            seen: try member.versionVector(),
                            at: now,
                            signed: [UInt8(truncatingIfNeeded: step), 1, 2],
                            signedAt: now &- UInt64(rng.next() % 3)
                        )
                    ]
                    try sqlite.recordReports(report, gossiped: false)
                    try pg.recordReports(report, gossiped: false)
                    if sent > 0 {
                        // Gossip about the other member, with a writer nobody knows.
                        var seen = try members[1 - who].versionVector()
                        seen.join(VersionVector([.node(77): 3]))
                        let gossip = [
                            MemberReport(
                                nodeID: try members[1 - who].info().nodeID,
                                seen: seen,
                                at: now - 10,
                                signed: [UInt8(truncatingIfNeeded: step), 3],
                                signedAt: now - 10
                            )
                        ]
                        try sqlite.recordReports(gossip, gossiped: true)
                        try pg.recordReports(gossip, gossiped: true)
                    }
                case 9:
                    what = "a member forgotten"
                    guard rng.chance(30) else { continue }
                    try sqlite.forgetMember(.node(3), at: now, dropPeer: true)
                    try pg.forgetMember(.node(3), at: now, dropPeer: true)
                default:
                    what = "collect"
                    let round = try sqlite.collect(now: now)
                    var inPG = try pg.collect(now: now)
                    inPG.pagesFreed = round.pagesFreed
                    #expect(inPG == round, "seed \(seed) step \(step): the round")
                    collected += round.collected
                    purged += round.purged
                }
                let expected = try PostgresReplicaTests.items { try sqlite.forEachItem(includeDeleted: true, $0) }
                let got = try PostgresReplicaTests.items {
                    try pg.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0)
                }
                guard got == expected else {
                    Issue.record("seed \(seed) step \(step) (\(what)): in PostgreSQL \(got), in SQLite \(expected)")
                    return
                }
                #expect(try pg.counts() == sqlite.counts(), "seed \(seed) step \(step) (\(what))")
                #expect(
                    Self.comparable(try pg.collectionFigures(now: now))
                        == Self.comparable(try sqlite.collectionFigures(now: now)),
                    "seed \(seed) step \(step) (\(what))"
                )
                #expect(try pg.memberReports() == sqlite.memberReports(), "seed \(seed) step \(step) (\(what))")
                #expect(try pg.stabilityLedger() == sqlite.stabilityLedger(), "seed \(seed) step \(step) (\(what))")
                #expect(try pg.departedMembers(now: now) == sqlite.departedMembers(now: now))
                #expect(try pg.frontierLaggard(now: now) == sqlite.frontierLaggard(now: now))
                for node in [NodeID.node(1), .node(3)] {
                    #expect(try pg.memberAwaySince(node, now: now) == sqlite.memberAwaySince(node, now: now))
                }
                #expect(try pg.awaySince(now: now) == sqlite.awaySince(now: now))
                #expect(try pg.staleSince(now: now) == sqlite.staleSince(now: now))
            }
        }
        // The runs did what they are about.
        #expect(collected > 0, "no item was collected")
        #expect(purged > 0, "no tombstone was purged")
    }

    /// A write concurrent with a delete, or a restore, arriving after the item was collected
    /// (from a member away meanwhile) brings the item back from its tombstone in both stores and
    /// no purge takes it; a write both had seen, sent again to a collected item, changes nothing;
    /// a purged item's old writes never bring it back.
    @Test func aLateWriteBringsACollectedItemBackAndAnOldOneDoesNot() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-late")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = CollectionSettings(trashWindow: 1_000, awayAfter: 6_000)
        let (a, b) = (
            try PostgresReplicaTests.sqlite(dir, "a", node: 1), try PostgresReplicaTests.sqlite(dir, "b", node: 3)
        )
        let sqlite = try PostgresReplicaTests.sqlite(dir, "relay", node: 2)
        let pg = try PostgresReplicaTests.replica(server, schema: "late", node: 2)
        defer { pg.close() }
        try sqlite.setCollectionSettings(settings)
        try pg.setCollectionSettings(settings)
        let (x, y, z) = (ItemID.named("x"), ItemID.named("y"), ItemID.named("z"))
        for id in [x, y, z] {
            try a.apply(
                .create(type: "task", assignments: [.set(.named("t"), .string("one"))]),
                to: id,
                wallMilliseconds: Self.t0
            )
        }
        var old: [DeltaBatch] = []
        func send(_ from: ReplicaStore, at now: UInt64, keep: Bool = false, reporting: [ReplicaStore]) throws {
            let held = try sqlite.versionVector()
            var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: nil)
            while let batch = try stream.next() {
                if keep { old.append(batch) }
                let changed = try sqlite.apply(batch, wallMilliseconds: now)
                #expect(try pg.apply(batch, wallMilliseconds: now) == changed)
            }
            for member in reporting {
                let report = [MemberReport(nodeID: try member.info().nodeID, seen: try member.versionVector(), at: now)]
                try sqlite.recordReports(report, gossiped: false)
                try pg.recordReports(report, gossiped: false)
            }
        }
        try send(a, at: Self.t0, keep: true, reporting: [a, b])
        let held = try b.versionVector()
        var stream = try a.deltaStream(for: held, maxUpdates: 10, deltaBase: nil)
        while let batch = try stream.next() { try b.apply(batch, wallMilliseconds: Self.t0) }
        // a deletes all three; b, not knowing, edits x; then, told, restores z (within its own
        // trash window, which is longer than the relays').
        for id in [x, y, z] { try a.apply(.delete, to: id, wallMilliseconds: Self.t0 + 10) }
        try b.apply(.update([.set(.named("t"), .string("late"))]), to: x, wallMilliseconds: Self.t0 + 20)
        var deletes = try a.deltaStream(for: try b.versionVector(), maxUpdates: 10, deltaBase: nil)
        while let batch = try deletes.next() { try b.apply(batch, wallMilliseconds: Self.t0 + 25) }
        try b.apply(.restore, to: z, wallMilliseconds: Self.t0 + 30)
        // The relays take a's deletes; b falls silent (its edit on its way), so once it is away
        // it holds the frontier back no longer, and the relays collect.
        var now = Self.t0 + 100
        try send(a, at: now, reporting: [a])
        var rounds = 0
        while try sqlite.collectionFigures(now: now).collectedItems < 3 {
            now += 1_000
            rounds += 1
            let reports = [MemberReport(nodeID: try a.info().nodeID, seen: try a.versionVector(), at: now)]
            try sqlite.recordReports(reports, gossiped: false)
            try pg.recordReports(reports, gossiped: false)
            let round = try sqlite.collect(now: now)
            var inPG = try pg.collect(now: now)
            inPG.pagesFreed = round.pagesFreed
            #expect(inPG == round)
            try #require(rounds < 40, "the items were never collected")
        }
        #expect(try Self.comparable(pg.collectionFigures(now: now)).collectedItems == 3)
        // An old batch again: the items stay collected.
        for batch in old {
            #expect(try sqlite.apply(batch, wallMilliseconds: now) == 0)
            #expect(try pg.apply(batch, wallMilliseconds: now) == 0)
        }
        #expect(try pg.collectionFigures(now: now).collectedItems == 3)
        // b's late edit and restore arrive: x and z are more than their tombstone again, in both,
        // and z is live.
        let heldByRelay = try sqlite.versionVector()
        var fromB = try b.deltaStream(for: heldByRelay, maxUpdates: 10, deltaBase: nil)
        while let batch = try fromB.next() {
            let changed = try sqlite.apply(batch, wallMilliseconds: now)
            #expect(try pg.apply(batch, wallMilliseconds: now) == changed)
        }
        #expect(try sqlite.collectionFigures(now: now).collectedItems == 1)
        #expect(
            Self.comparable(try pg.collectionFigures(now: now))
                == Self.comparable(try sqlite.collectionFigures(now: now))
        )
        #expect(try pg.itemState(x) == sqlite.itemState(x))
        #expect(try pg.itemState(x)?.fields[.named("t")] != nil, "the late write is held")
        #expect(try pg.itemState(z) == sqlite.itemState(z))
        #expect(try pg.itemState(z)?.isDeleted == false, "the restore is held")
        // Past the purge: y's tombstone goes, and its old writes do not bring it back.
        now += settings.purgeAfter + 1_000
        let purge = try sqlite.collect(now: now)
        var purgeInPG = try pg.collect(now: now)
        purgeInPG.pagesFreed = purge.pagesFreed
        #expect(purgeInPG == purge)
        #expect(try pg.itemState(y) == nil && sqlite.itemState(y) == nil)
        // The old batches again: the purged item stays gone. (The restored one, no longer
        // collected, takes its old fields back, in both: a restore after collection is what the
        // trash window, one setting for the whole cluster, rules out; here b's is longer.)
        for batch in old {
            let changed = try sqlite.apply(batch, wallMilliseconds: now)
            #expect(try pg.apply(batch, wallMilliseconds: now) == changed)
        }
        #expect(try pg.itemState(y) == nil && sqlite.itemState(y) == nil)
        #expect(try pg.itemState(z) == sqlite.itemState(z))
        // The restored item is live, and no purge takes it.
        #expect(try pg.itemState(z)?.isDeleted == false && sqlite.itemState(z)?.isDeleted == false)
        #expect(try pg.counts() == sqlite.counts())
    }

    /// A revoked member's writers fold once the stable vector reaches them, as in the SQLite
    /// store: not while their counter still moves, the hello's vectors and a session's start
    /// tell the folds, and a peer's folds are taken only where the vector covers them.
    @Test func retiredWritersFoldAsInTheSQLiteStore() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-fold")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (a, c) = (
            try PostgresReplicaTests.sqlite(dir, "a", node: 1), try PostgresReplicaTests.sqlite(dir, "c", node: 3)
        )
        let sqlite = try PostgresReplicaTests.sqlite(dir, "relay", node: 2)
        let pg = try PostgresReplicaTests.replica(server, schema: "fold", node: 2)
        defer { pg.close() }
        var now = Self.t0
        func send(_ from: ReplicaStore) throws {
            let held = try sqlite.versionVector()
            var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: nil)
            while let batch = try stream.next() {
                try sqlite.apply(batch, wallMilliseconds: now)
                try pg.apply(batch, wallMilliseconds: now)
            }
            let reports = [MemberReport(nodeID: try from.info().nodeID, seen: try from.versionVector(), at: now)]
            try sqlite.recordReports(reports, gossiped: false)
            try pg.recordReports(reports, gossiped: false)
        }
        try a.apply(
            .create(type: "task", assignments: [.set(.named("t"), .string("a"))]),
            to: .named("x"),
            wallMilliseconds: now
        )
        try c.apply(
            .create(type: "task", assignments: [.set(.named("t"), .string("c"))]),
            to: .named("y"),
            wallMilliseconds: now
        )
        // The members meet, so every report holds every write.
        for (from, to) in [(a, c), (c, a)] {
            let held = try to.versionVector()
            var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: nil)
            while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: now) }
        }
        try send(a)
        try send(c)
        let writer = try #require(try c.versionVector().nodes.first { $0.isWriter(of: .node(3)) })
        let revoked = PostgresOverruleTests.cut(of: .node(3), held: try sqlite.versionVector())
        // Not stable yet: nothing folds.
        #expect(try pg.foldRetiredWriters(revoked: revoked, unchangedSince: nil).folded.isEmpty)
        for _ in 0..<4 {
            now += 1_000
            for member in [a, c] { try send(member) }
            _ = try sqlite.collect(now: now)
            _ = try pg.collect(now: now)
        }
        // The counter moved since the round before: it waits for a quiet round.
        var counters = try pg.versionVector().counters
        counters[writer] = try #require(counters[writer]) - 1
        let moved = VersionVector(counters)
        #expect(try pg.foldRetiredWriters(revoked: revoked, unchangedSince: moved).folded.isEmpty)
        let fromSQLite = try sqlite.foldRetiredWriters(revoked: revoked, unchangedSince: nil).folded
        let fromPG = try pg.foldRetiredWriters(revoked: revoked, unchangedSince: nil).folded
        #expect(fromPG == fromSQLite)
        #expect(fromPG[writer] > 0, "the revoked member's writer folds")
        #expect(try pg.foldedWriters() == sqlite.foldedWriters())
        #expect(try pg.announcedVectors().folded == fromPG)
        #expect(try pg.sessionStart(with: .node(1)).folded == fromPG)
        // A peer's folds: taken where the vector covers them, not beyond.
        let member = try a.versionVector().nodes.first { $0.isWriter(of: .node(1)) }!
        let held = try pg.versionVector()[member]
        let beyond = VersionVector([member: held + 5])
        #expect(try pg.adoptFolds(beyond).isEmpty && sqlite.adoptFolds(beyond).isEmpty)
        let covered = VersionVector([member: held])
        #expect(try pg.adoptFolds(covered) == covered)
        #expect(try sqlite.adoptFolds(covered) == covered)
        #expect(try pg.foldedWriters() == sqlite.foldedWriters())
    }
}
