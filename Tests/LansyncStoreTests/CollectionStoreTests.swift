import Foundation
import LansyncCore
import LansyncTestSupport
import Testing

@testable import LansyncStore

/// Collection in the SQLite store (Docs/STORAGE.md, "Collection"): what a round removes, what a
/// collected item takes in afterwards, the change feed's answer behind it, and the members'
/// reports.
@Suite struct CollectionStoreTests {
    let dir = makeTemporaryDirectory("collect")
    let t0: UInt64 = 1_700_000_000_000
    var lease: WriterLease { WriterLease(directory: dir) }
    let title = FieldName.named("title")

    func create(_ node: UInt64) throws -> ReplicaStore {
        let store = try ReplicaStore.create(
            path: "\(dir)/r\(node).sqlite",
            nodeID: .node(node),
            clusterID: .node(99),
            nodeName: "n\(node)",
            fingerprint: "fp",
            lease: lease
        )
        try store.setCollectionSettings(CollectionSettings(trashWindow: 0, awayAfter: CollectionSettings.day))
        return store
    }

    func sync(_ from: ReplicaStore, _ to: ReplicaStore) throws {
        let held = try to.versionVector()
        var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: held)
        while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: t0) }
    }

    /// Two replicas that hold the same: a deletes x, both learn each other's progress, both
    /// collect.
    @Test func aCollectedItemKeepsItsTombstoneAndTakesBackNothingItForgot() throws {
        let a = try create(1)
        let b = try create(2)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try sync(a, b)
        // b's full state of x, as an old peer would send it again.
        let old = try #require(try b.itemState(x))
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        try sync(a, b)
        let feedBefore = try a.latestChangeSeq()

        // No report of b yet: a's frontier is its own vector, and b is unknown, so nothing waits.
        // With b's report, two rounds: a checkpoint, then (everyone holding its join) stable.
        let now = WallClock.milliseconds
        try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now)])
        #expect(try a.collect(now: now).collected == 0, "a checkpoint first")
        let round = try a.collect(now: now + 1)
        #expect(round.collected == 1)
        let collected = try #require(try a.itemState(x))
        #expect(collected.isDeleted && Array(collected.fields.keys) == [.deleted], "\(collected.fields.keys)")
        let figures = try a.collectionFigures(now: now + 1)
        #expect(figures.collectedItems == 1 && figures.collectableItems == 0 && figures.liveFields == 0)

        // The same fields again (a whole state, as a rolled-back or slow peer sends it): nothing
        // comes back.
        let resend = DeltaBatch(
            updates: old.fields.map { FieldUpdate(key: FieldKey(item: x, field: $0.key), change: .state($0.value)) },
            covers: try b.versionVector()
        )
        try a.apply(resend, wallMilliseconds: t0 + 2)
        #expect(try a.itemState(x)?.fields.keys.sorted() == [.deleted])

        // Past the trash window: a restore says so, and changes nothing.
        #expect(throws: StoreError.self) { try a.apply(.restore, to: x, wallMilliseconds: t0 + 3) }
        #expect(try a.itemState(x)?.isDeleted == true)

        // A feed reader behind the collection is told to start again; one at the latest is not.
        #expect(throws: StoreError.feedCollected(since: 1, floor: 2)) { try a.changes(since: 1) }
        #expect(try a.changes(since: feedBefore).isEmpty)
        #expect(try a.changes(since: 0).map(\.field) == [.deleted], "a reader from 0 gets the current state")

        // b collects too, and a machine that joins now receives the tombstone alone.
        try b.recordReports([MemberReport(nodeID: .node(1), seen: try a.versionVector(), at: now)])
        _ = try b.collect(now: now)
        #expect(try b.collect(now: now + 1).collected == 1)
        let c = try create(3)
        try sync(a, c)
        #expect(try c.itemState(x)?.fields.keys.sorted() == [.deleted])
        #expect(try c.itemState(x)?.isDeleted == true)

        // A write made since (a late edit under a new dot) is kept, and the item is no longer
        // counted as collected: a later round judges it again.
        var late = old.fields[title]!
        late.assign(.string("late"), dot: Dot(node: .node(7), counter: 1), timestamp: HLCTimestamp(rawValue: 1))
        try a.apply(
            DeltaBatch(
                updates: [FieldUpdate(key: FieldKey(item: x, field: title), change: .state(late))],
                covers: VersionVector([.node(7): 1])
            ),
            wallMilliseconds: t0 + 2
        )
        #expect(try a.itemState(x)?.fields.keys.sorted() == [.deleted, title])
        #expect(try a.itemState(x)?.isDeleted == true, "the delete still wins")
        #expect(try a.collectionFigures(now: now + 1).collectableItems == 1)
    }

    @Test func aMemberBehindHoldsCollectionBackUntilForgotten() throws {
        let a = try create(1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        let now = WallClock.milliseconds
        // b last reported before the delete: it has not seen it.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now)])
        for step in UInt64(0)..<3 { #expect(try a.collect(now: now + step).collected == 0) }
        #expect(try a.collectionFigures(now: now).heldBackBy == .node(2))

        try a.forgetMember(.node(2), at: now)
        #expect(try a.departedMembers(now: now) == [.node(2)])
        _ = try a.collect(now: now + 3)
        #expect(try a.collect(now: now + 4).collected == 1)

        // A report made after the forgetting makes it a member again; an older one does not, nor
        // does a newer one another member passes on.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 10)])
        #expect(try a.departedMembers(now: now) == [.node(2)])
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now + 5)], gossiped: true)
        #expect(try a.departedMembers(now: now + 5) == [.node(2)])
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now + 10)])
        #expect(try a.departedMembers(now: now + 10).isEmpty)
    }

    /// What a member passes on of others is bounded by what this replica knows: made-up nodes
    /// and writers are not kept.
    @Test func gossipedReportsNameOnlyKnownNodesAndWriters() throws {
        let a = try create(1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        let now = WallClock.milliseconds
        let madeUp = (100..<400).map {
            MemberReport(nodeID: .node(UInt64($0)), seen: VersionVector([.node(UInt64($0)): 5]), at: now)
        }
        try a.recordReports(madeUp, gossiped: true)
        #expect(try a.memberReports().isEmpty, "no made-up node is kept")
        // A known member's report keeps only the writers this replica holds.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now)])
        try a.recordReports(
            [MemberReport(nodeID: .node(2), seen: VersionVector([.node(1): 1, .node(555): 9]), at: now + 1)],
            gossiped: true
        )
        #expect(try a.memberReports().map(\.seen) == [VersionVector([.node(1): 1])])
    }

    @Test func aMemberSilentPastTheAwayWindowHoldsNothingBack() throws {
        let a = try create(1)
        let now = WallClock.milliseconds
        try a.recordReports([
            MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 2 * CollectionSettings.day)
        ])
        #expect(try a.departedMembers(now: now) == [.node(2)])
        #expect(try a.collectionFigures(now: now).departed == [.node(2)])
    }
}
