import Foundation
import GRDB
import LansyncCore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// Collection in every store (Docs/STORAGE.md, "Collection"): what a round removes, what a
/// collected item takes in afterwards, the change feed's answer behind it, and the members'
/// reports. The tests that need what only the SQLite store has run on it alone.
@Suite(.computeBound) struct CollectionStoreTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("collect")
    let title = FieldName.named("title")

    /// A SQLite replica of the suite's directory, for the tests that run on SQLite only.
    func create(_ node: UInt64) throws -> ReplicaStore {
        let store = try replica(node)
        try store.setCollectionSettings(CollectionSettings(trashWindow: 0, awayAfter: CollectionSettings.day))
        return store
    }

    /// Replica `node` of `site`, with the same settings.
    func create(in site: StorageSite, _ node: UInt64) throws -> any ReplicaStorage {
        let store = try site.replica(node)
        try store.setCollectionSettings(CollectionSettings(trashWindow: 0, awayAfter: CollectionSettings.day))
        return store
    }

    /// Everything `to` lacks of `from`, as deltas against what `to` holds, as a session brings it.
    func sync(from: any ReplicaStorage, to: any ReplicaStorage) throws {
        try syncAsASession(from, to, batchSize: batchSize, deltas: true, wallMilliseconds: t0)
    }

    /// `batch` received by `store` from `sender` (writing as `incarnation`), within the standard
    /// bounds, nothing refused or revoked; `completingStream`: the stream completes with it (what
    /// it covers joins the version vector at once).
    func receive(
        _ batch: DeltaBatch,
        into store: any ReplicaStorage,
        from sender: NodeID,
        incarnation: NodeID,
        at wall: UInt64,
        rejoinedAt: UInt64? = nil,
        completingStream: Bool
    ) throws {
        try store.receive(
            batch,
            from: sender,
            incarnation: incarnation,
            wallMilliseconds: wall,
            refuse: nil,
            revoked: RevokedWriters(),
            writers: .standard,
            allowance: nil,
            rejoinedAt: rejoinedAt,
            completingStream: completingStream
        )
    }

    /// The items changed after feed position `seq` (every item with nil), and where the feed
    /// stands (``ReplicaMarks``).
    func changed(_ store: any ReplicaStorage, after seq: Int64?) throws -> (items: [StoredItem], marks: ReplicaMarks) {
        var items: [StoredItem] = []
        let marks = try store.forEachItem(changedAfter: seq) { items.append($0) }
        return (items, marks)
    }

    /// One round of retired writers' folding, no writer revoked.
    @discardableResult
    func fold(
        _ store: any ReplicaStorage,
        unchangedSince previous: VersionVector? = nil
    ) throws -> (folded: VersionVector, vector: VersionVector) {
        try store.foldRetiredWriters(revoked: RevokedWriters(), unchangedSince: previous)
    }

    /// The page's counts by type (read from the indexes) count a deleted item as deleted before
    /// and after it is collected (when it keeps no type).
    // SQLite only: typeCounts() (the page's counts by type) is the SQLite store's alone, not in ReplicaStorage.
    @Test func typeCountsCountDeletedItemsCollectedOrNot() throws {
        let a = try create(1)
        for i in 0..<9 {
            try a.apply(
                .create(type: i % 2 == 0 ? "task" : "note", assignments: [.set(title, .string("\(i)"))]),
                to: .named("i\(i)"),
                wallMilliseconds: t0
            )
        }
        for i in 0..<3 { try a.apply(.delete, to: .named("i\(i)"), wallMilliseconds: t0 + 1) }
        let counts = { try a.typeCounts().map { "\($0.type) \($0.live) \($0.deleted)" } }
        #expect(try counts() == ["note 3 1", "task 3 2"])
        let now = WallClock.milliseconds
        _ = try a.collect(now: now)
        #expect(try a.collect(now: now + 1).collected == 3)
        // A collected item is its minimal tombstone, which keeps its `_type`.
        let afterCollection = try counts()
        #expect(afterCollection == ["note 3 1", "task 3 2"], "collected items are still deleted ones, of their type")
        #expect(try a.itemState(.named("i0"))?.fields.keys.sorted() == [.deleted, .type])
    }

    /// A conflict on the `_type` a minimal tombstone keeps (two concurrent creates of different
    /// types) stays counted after the collection, and a settlement arriving later takes it away:
    /// the item's count never goes below zero.
    // SQLite only: it reads the item row's own conflict count, which ReplicaStorage does not expose.
    @Test func aConflictOnTheKeptTypeStaysCountedUntilSettled() throws {
        let a = try create(1)
        let b = try create(2)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: []), to: x, wallMilliseconds: t0)
        try b.apply(.create(type: "note", assignments: []), to: x, wallMilliseconds: t0)
        try sync(a, b)
        try sync(b, a)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        try sync(a, b)
        let count = {
            try a.database.read { try Int.fetchOne($0, sql: "SELECT conflicts FROM item WHERE item_id = 'x'") }
        }
        #expect(try count() == 1 && a.conflicts().map(\.field) == [.type])
        let now = WallClock.milliseconds
        try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now)])
        _ = try a.collect(now: now)
        #expect(try a.collect(now: now + 1).collected == 1)
        #expect(try count() == 1, "still one conflict, on the kept type")
        #expect(try a.conflicts().map(\.field) == [.type])
        try b.apply(.resolve(.type, .string("task")), to: x, wallMilliseconds: t0 + 2)
        try sync(b, a)
        #expect(try count() == 0 && a.conflicts().isEmpty, "settled")
    }

    /// Two replicas that hold the same: a deletes x, both learn each other's progress, both
    /// collect.
    @Test(arguments: StorageKind.all)
    func aCollectedItemKeepsItsTombstoneAndTakesBackNothingItForgot(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-tombstone")
        defer { site.close() }
        let a = try create(in: site, 1)
        let b = try create(in: site, 2)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        // The feed's number after the create, the last it gave (the title's: fields are numbered
        // in name order, `_type` first).
        let created = try changed(a, after: nil).marks.latestSeq
        try sync(from: a, to: b)
        // b's full state of x, as an old peer would send it again.
        let old = try #require(try b.itemState(x))
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        try sync(from: a, to: b)
        let feedBefore = try changed(a, after: nil).marks.latestSeq

        // No report of b yet: a's frontier is its own vector, and b is unknown, so nothing waits.
        // With b's report, two rounds: a checkpoint, then (everyone holding its join) stable.
        let now = WallClock.milliseconds
        try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now)], gossiped: false)
        #expect(try a.collect(now: now).collected == 0, "a checkpoint first")
        let round = try a.collect(now: now + 1)
        #expect(round.collected == 1)
        let collected = try #require(try a.itemState(x))
        #expect(collected.isDeleted && collected.fields.keys.sorted() == [.deleted, .type], "\(collected.fields.keys)")
        let figures = try a.collectionFigures(now: now + 1)
        #expect(figures.collectedItems == 1 && figures.collectableItems == 0 && figures.liveFields == 0)

        // The same fields again (a whole state, as a rolled-back or slow peer sends it): nothing
        // comes back.
        let resend = DeltaBatch(
            updates: old.fields.map { FieldUpdate(key: FieldKey(item: x, field: $0.key), change: .state($0.value)) },
            covers: try b.versionVector()
        )
        try receive(resend, into: a, from: .node(2), incarnation: .node(2), at: t0 + 2, completingStream: true)
        #expect(try a.itemState(x)?.fields.keys.sorted() == [.deleted, .type])

        // Past the trash window: a restore says so, and changes nothing.
        #expect(throws: StoreError.self) { try a.apply(.restore, to: x, wallMilliseconds: t0 + 3) }
        #expect(try a.itemState(x)?.isDeleted == true)

        // A feed reader behind the collection is told to start again: the feed's floor is the
        // number the collection put out of use (the title's), past a reader that read only the
        // `_type`. One at the latest is not, and finds nothing new.
        let feed = try changed(a, after: feedBefore)
        #expect(feed.marks.floor == created, "a reader at \(created - 1) starts again")
        #expect(feed.marks.floor <= feedBefore && feed.items.isEmpty, "a reader at the latest goes on")
        let tombstone = StoredItem(id: x, type: "task", deleted: true, fields: [], conflicts: [])
        #expect(try changed(a, after: nil).items == [tombstone], "a reader from 0 gets the current state")

        // b collects too, and a machine that joins now receives the tombstone and the type alone.
        try b.recordReports([MemberReport(nodeID: .node(1), seen: try a.versionVector(), at: now)], gossiped: false)
        _ = try b.collect(now: now)
        #expect(try b.collect(now: now + 1).collected == 1)
        let c = try create(in: site, 3)
        try sync(from: a, to: c)
        #expect(try c.itemState(x)?.fields.keys.sorted() == [.deleted, .type])
        #expect(try c.itemState(x)?.isDeleted == true)

        // A write made since (a late edit under a new dot) is kept, and the item is no longer
        // counted as collected: a later round judges it again.
        var late = old.fields[title]!
        late.assign(.string("late"), dot: Dot(node: .node(7), counter: 1), timestamp: HLCTimestamp(rawValue: 1))
        try receive(
            DeltaBatch(
                updates: [FieldUpdate(key: FieldKey(item: x, field: title), change: .state(late))],
                covers: VersionVector([.node(7): 1])
            ),
            into: a,
            from: .node(2),
            incarnation: .node(2),
            at: t0 + 2,
            completingStream: true
        )
        #expect(try a.itemState(x)?.fields.keys.sorted() == [.deleted, .type, title])
        #expect(try a.itemState(x)?.isDeleted == true, "the delete still wins")
        #expect(try a.collectionFigures(now: now + 1).collectableItems == 1)
    }

    @Test(arguments: StorageKind.all)
    func aMemberBehindHoldsCollectionBackUntilForgotten(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-behind")
        defer { site.close() }
        let a = try create(in: site, 1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        let now = WallClock.milliseconds
        // b last reported before the delete: it has not seen it.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now)], gossiped: false)
        for step in UInt64(0)..<3 { #expect(try a.collect(now: now + step).collected == 0) }
        #expect(try a.collectionFigures(now: now).heldBackBy == .node(2))

        try a.forgetMember(.node(2), at: now, dropPeer: true)
        #expect(try a.departedMembers(now: now) == [.node(2)])
        _ = try a.collect(now: now + 3)
        #expect(try a.collect(now: now + 4).collected == 1)

        // A report made after the forgetting makes it a member again; an older one does not, nor
        // does a newer one another member passes on.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 10)], gossiped: false)
        #expect(try a.departedMembers(now: now) == [.node(2)])
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now + 5)], gossiped: true)
        #expect(try a.departedMembers(now: now + 5) == [.node(2)])
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now + 10)], gossiped: false)
        #expect(try a.departedMembers(now: now + 10).isEmpty)
    }

    /// What a member passes on of others is bounded by what this replica knows: made-up nodes
    /// and writers are not kept.
    @Test(arguments: StorageKind.all)
    func gossipedReportsNameOnlyKnownNodesAndWriters(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-gossip")
        defer { site.close() }
        let a = try create(in: site, 1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        let now = WallClock.milliseconds
        let madeUp = (100..<400).map {
            MemberReport(nodeID: .node(UInt64($0)), seen: VersionVector([.node(UInt64($0)): 5]), at: now)
        }
        try a.recordReports(madeUp, gossiped: true)
        #expect(try a.memberReports().isEmpty, "no made-up node is kept")
        // A known member's report keeps only the writers this replica holds.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now)], gossiped: false)
        try a.recordReports(
            [MemberReport(nodeID: .node(2), seen: VersionVector([.node(1): 1, .node(555): 9]), at: now + 1)],
            gossiped: true
        )
        #expect(try a.memberReports().map(\.seen) == [VersionVector([.node(1): 1])])
    }

    /// The member's own signed report (protocol 1.13) is kept to pass on, and replaced only by
    /// one the member signed later: a replayed older one, passed on by anyone, changes nothing.
    @Test(arguments: StorageKind.all)
    func theLatestSignedReportIsKeptToPassOn(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-signed")
        defer { site.close() }
        let a = try create(in: site, 1)
        let now = WallClock.milliseconds
        func report(_ signed: [UInt8], at: UInt64, gossiped: Bool) throws {
            try a.recordReports(
                [MemberReport(nodeID: .node(2), seen: VersionVector(), at: now, signed: signed, signedAt: at)],
                gossiped: gossiped
            )
        }
        try report([1], at: now - 100, gossiped: false)
        #expect(try a.memberReports().map(\.signed) == [[1]])
        try report([2], at: now - 200, gossiped: true)
        #expect(try a.memberReports().map(\.signed) == [[1]], "an older one replaced the newer")
        try report([3], at: now - 50, gossiped: true)
        #expect(try a.memberReports().map(\.signed) == [[3]])
        #expect(try a.memberReports().map(\.signedAt) == [now - 50])
        // The periodic save of a peer's progress carries no signature and keeps the one held.
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now + 10)], gossiped: false)
        #expect(try a.memberReports().map(\.signed) == [[3]])
    }

    /// A member silent past the away window is away: refused, and no longer counted for SYNCED.
    /// It holds the frontier back for the clock margin more, so that a member whose clock runs
    /// behind this one's refuses it before this replica collects without it (a property history
    /// found the gap: a late delete let in by such a member reopened a collected item's trash).
    @Test(arguments: StorageKind.all)
    func aMemberSilentPastTheAwayWindowAndTheMarginHoldsNothingBack(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-silent")
        defer { site.close() }
        let a = try create(in: site, 1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        let now = WallClock.milliseconds
        let day = CollectionSettings.day
        #expect(try a.collectionSettings().holdsBackFor == 2 * day, "the window and a margin of one day")
        // Silent for a day and a half: away, yet within the margin.
        try a.recordReports(
            [MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 3 * day / 2)],
            gossiped: false
        )
        #expect(try a.departedMembers(now: now) == [.node(2)])
        #expect(try a.memberAwaySince(.node(2), now: now) == now - 3 * day / 2, "refused")
        #expect(try a.collectionFigures(now: now).departed.isEmpty)
        #expect(try a.collectionFigures(now: now).heldBackBy == .node(2))
        for step in UInt64(0)..<3 { #expect(try a.collect(now: now + step).collected == 0) }
        // Past the margin too: it holds nothing back, and the delete is collected.
        let later = now + day
        #expect(try a.collectionFigures(now: later).departed == [.node(2)])
        _ = try a.collect(now: later)
        #expect(try a.collect(now: later + 1).collected == 1)
    }

    /// A member back from being away (Docs/MERGE.md, "Coming back after being away"): it keeps
    /// aside what only it holds, empties itself, takes a's snapshot, and re-issues its writes
    /// under a new writer, with their concurrency, except into items a holds deleted.
    // SQLite only: links (itemsLinking(to:), table item_link) are the SQLite store's alone.
    @Test func aRejoinReissuesOnlyItsOwnUnseenWritesAfterTheSnapshot() throws {
        let a = try create(1)
        let c = try create(3)
        let (keep, gone, both, fresh) = (
            ItemID.named("keep"), ItemID.named("gone"), ItemID.named("both"), ItemID.named("fresh")
        )
        let note = FieldName.named("note")
        let tags = FieldName.named("tags")
        for id in [keep, gone, both] {
            try a.apply(.create(type: "t", assignments: [.set(title, .string("one"))]), to: id, wallMilliseconds: t0)
        }
        try a.apply(.update([.add(tags, .string("x"))]), to: keep, wallMilliseconds: t0)
        // A link between items: its row goes with the items when the replica is emptied.
        try a.apply(.update([.set(.named("see"), .ref(keep))]), to: both, wallMilliseconds: t0)
        try sync(a, c)
        let oldWriter = try c.info().writerID
        // Apart: a deletes `gone` and edits `both`; c edits all three, adds to a list, creates one.
        try a.apply(.delete, to: gone, wallMilliseconds: t0 + 1)
        try a.apply(.update([.set(title, .string("from a"))]), to: both, wallMilliseconds: t0 + 1)
        try c.apply(
            .update([.set(note, .string("offline")), .add(tags, .string("y"))]),
            to: keep,
            wallMilliseconds: t0 + 2
        )
        try c.apply(.update([.set(note, .string("late"))]), to: gone, wallMilliseconds: t0 + 2)
        try c.apply(.update([.set(title, .string("from c"))]), to: both, wallMilliseconds: t0 + 2)
        try c.apply(.create(type: "t", assignments: [.set(title, .string("new"))]), to: fresh, wallMilliseconds: t0 + 2)

        #expect(try c.itemsLinking(to: keep).count == 1, "c holds the link before its rejoin")
        let start = try c.rejoin(keepingUnseenBy: try a.versionVector(), now: t0 + 3)
        #expect(start.items == 4 && start.fields == 6, "\(start)")
        #expect(try c.itemState(keep) == nil && c.versionVector().isEmpty, "the replica is empty")
        #expect(try c.itemsLinking(to: keep).isEmpty, "its links went with its items")
        #expect(
            try c.database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM item_link") } == 0,
            "no link row is left"
        )
        #expect(try c.info().writerID != oldWriter, "a new writer")
        #expect(try c.rejoinedAt() == t0 + 3 && c.hasRejoinPending())

        try sync(a, c)
        let outcome = try #require(try c.reissueRejoinPending(now: t0 + 4))
        #expect(outcome == RejoinOutcome(items: 3, writes: 3, dropped: 1), "one write per edit: \(outcome)")
        #expect(try !c.hasRejoinPending())
        #expect(try c.reissueRejoinPending(now: t0 + 5) == nil, "nothing waits any more")
        // Nothing of the old writer beyond what a held: the writes a lacked now have new names.
        #expect(try c.versionVector()[oldWriter] == a.versionVector()[oldWriter])

        try sync(c, a)
        #expect(try c.itemsLinking(to: keep).map(\.item) == [both], "one link, from the item that holds it")
        for id in [keep, gone, both, fresh] {
            #expect(try a.itemState(id)?.view == c.itemState(id)?.view, "\(id.rawValue)")
        }
        let kept = try #require(try a.itemState(keep))
        #expect(kept.shownFields[note] == .string("offline"))
        #expect(kept.shownFields[tags] == .list([.string("x"), .string("y")]))
        let gone1 = try #require(try a.itemState(gone))
        #expect(gone1.isDeleted && gone1.shownFields[note] == nil, "the late edit of a deleted item is dropped")
        // Concurrent with a's edit when made, concurrent still: a conflict both can see.
        #expect(try a.itemState(both)?.conflictedFields == [title])
        #expect(try a.itemState(fresh)?.shownFields[title] == .string("new"))
    }

    /// A rejoin into a snapshot that lacks items this replica created out of its peer's sight:
    /// one it deleted itself comes back deleted (the delete is its own, re-issued with it); one
    /// it restored while another member deleted it comes back deleted too (its `_deleted`, kept
    /// aside for the restore, carries the other's delete), the restore kept; one held deleted by
    /// another member's delete alone does not come back at all (without its `_deleted`, its
    /// create would bring it back live: a property history found it, with a relay put back from
    /// a copy that then rejoined from a member which never saw the item).
    @Test(arguments: StorageKind.all)
    func aRejoinNeverBringsBackAnItemHeldDeletedByAnother(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-rejoin-deleted")
        defer { site.close() }
        let (b, c, fresh) = (try create(in: site, 2), try create(in: site, 3), try create(in: site, 4))
        try b.setCollectionSettings(
            CollectionSettings(trashWindow: CollectionSettings.day, awayAfter: CollectionSettings.day)
        )
        let (mine, theirs, both) = (ItemID.named("mine"), ItemID.named("theirs"), ItemID.named("both"))
        for id in [mine, theirs, both] {
            try b.apply(.create(type: "t", assignments: [.set(title, .string("one"))]), to: id, wallMilliseconds: t0)
        }
        try sync(from: b, to: c)
        try b.apply(.delete, to: both, wallMilliseconds: t0 + 1)
        try b.apply(.restore, to: both, wallMilliseconds: t0 + 2)
        try c.apply(.delete, to: theirs, wallMilliseconds: t0 + 1)
        try c.apply(.delete, to: both, wallMilliseconds: t0 + 1)
        try sync(from: c, to: b)
        try b.apply(.delete, to: mine, wallMilliseconds: t0 + 1)
        for id in [mine, theirs, both] { #expect(try b.itemState(id)?.isDeleted == true, "\(id)") }

        // `fresh` never held either item: b rejoins from it.
        _ = try b.rejoin(keepingUnseenBy: try fresh.versionVector(), adopting: [], now: t0 + 2)
        try sync(from: fresh, to: b)
        let outcome = try #require(try b.reissueRejoinPending(now: t0 + 3))
        #expect(outcome.items == 2 && outcome.dropped == 1, "\(outcome)")
        #expect(try b.itemState(mine)?.isDeleted == true, "its own delete came back with it")
        #expect(try b.itemState(theirs) == nil, "not brought back live")
        let restored = try #require(try b.itemState(both))
        #expect(restored.isDeleted, "the other's delete came back with the restore it was concurrent with")
        #expect(
            restored.fields[.deleted]?.versions.contains { $0.write == .assign(.bool(false)) } == true,
            "the restore is kept"
        )
    }

    /// Who is away: a member silent past the window or forgotten; this replica itself when it
    /// has not heard of the relay (or, with no relay known, met a peer) for that long.
    @Test(arguments: StorageKind.all)
    func awayIsJudgedByTheLastReportAndTheLastSync(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-away")
        defer { site.close() }
        let a = try create(in: site, 1)
        let now = WallClock.milliseconds
        let day = CollectionSettings.day
        try a.recordReports(
            [
                MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 2 * day),
                MemberReport(nodeID: .node(3), seen: VersionVector(), at: now - day / 2),
            ],
            gossiped: false
        )
        #expect(try a.memberAwaySince(.node(2), now: now) == now - 2 * day)
        #expect(try a.memberAwaySince(.node(3), now: now) == nil)
        #expect(try a.memberAwaySince(.node(4), now: now) == nil, "unknown")
        try a.forgetMember(.node(3), at: now, dropPeer: true)
        #expect(try a.memberAwaySince(.node(3), now: now) == now, "forgotten")
        #expect(try a.awaySince(now: now) == nil, "never met anyone")
        try a.savePeer(
            PeerRecord(nodeID: .node(2), name: "b", address: nil, source: .configured, lastSync: now - 2 * day)
        )
        #expect(try a.awaySince(now: now) == now - 2 * day)
        #expect(try a.awaySince(now: now - day - 1) == nil)
        // With a relay known, what counts is when this replica last heard of the relay.
        try a.savePeer(PeerRecord(nodeID: .node(2), name: "b", address: nil, source: .configured, lastSync: now))
        #expect(try a.awaySince(now: now) == nil)
        try a.recordReports([MemberReport(nodeID: .node(5), seen: VersionVector(), at: now - 3 * day)], gossiped: false)
        try a.noteRelay(.node(5))
        #expect(try a.awaySince(now: now) == now - 3 * day, "the relay was last heard of three days ago")
        try a.recordReports([MemberReport(nodeID: .node(5), seen: VersionVector(), at: now - day / 2)], gossiped: false)
        #expect(try a.awaySince(now: now) == nil)
        // The relay itself is never away.
        try a.noteRelay(.node(1))
        #expect(try a.awaySince(now: now + 10 * day) == nil)
    }

    /// A minimal tombstone goes an away window after its collection: the item is no longer held,
    /// what was seen of it does not bring it back, and a newcomer never hears of it.
    @Test(arguments: StorageKind.all)
    func aMinimalTombstoneIsPurgedAnAwayWindowAfterItsCollection(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-purge")
        defer { site.close() }
        let a = try create(in: site, 1)
        let b = try create(in: site, 2)
        let x = ItemID.named("x")
        let y = ItemID.named("y")
        for id in [x, y] {
            try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: id, wallMilliseconds: t0)
        }
        try sync(from: a, to: b)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        try sync(from: a, to: b)
        // b's whole state of x, tombstone included, as a slow peer would send it again.
        let old = try #require(try b.itemState(x))
        let now = WallClock.milliseconds
        let day = CollectionSettings.day
        try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now)], gossiped: false)
        _ = try a.collect(now: now)
        #expect(try a.collect(now: now + 1).collected == 1)
        // Within the away window and its clock margin (two days here), the tombstone stays.
        try a.recordReports(
            [MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now + day + 2)],
            gossiped: false
        )
        #expect(try a.collect(now: now + day + 2).purged == 0)
        #expect(try a.itemState(x)?.fields.keys.sorted() == [.deleted, .type])
        try a.recordReports(
            [MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now + 2 * day + 2)],
            gossiped: false
        )
        // x's delete is the feed's latest change, and a feed reader has seen it.
        let seen = try changed(a, after: nil).marks.latestSeq
        #expect(try changed(a, after: seen - 1).items.map(\.id) == [x])
        let round = try a.collect(now: now + 2 * day + 2)
        #expect(round.purged == 1)
        // The purge took the field with that number: the next change still comes after it.
        try a.apply(.update([.set(title, .string("two"))]), to: y, wallMilliseconds: t0 + 3)
        #expect(try changed(a, after: seen).items.map(\.id) == [y], "a change after a purge has a new number")
        try a.apply(.update([.set(title, .string("one"))]), to: y, wallMilliseconds: t0 + 4)
        #expect(try a.itemState(x) == nil)
        #expect(try a.itemState(y)?.shownFields[title] == .string("one"), "live items stay")
        let figures = try a.collectionFigures(now: now + 2 * day + 2)
        #expect(figures.purgedItems == 1 && figures.collectedItems == 0 && figures.liveFields == 2)

        let resend = DeltaBatch(
            updates: old.fields.map { FieldUpdate(key: FieldKey(item: x, field: $0.key), change: .state($0.value)) },
            covers: try b.versionVector()
        )
        try receive(resend, into: a, from: .node(2), incarnation: .node(2), at: t0 + 2, completingStream: true)
        #expect(try a.itemState(x) == nil, "what was seen of a purged item does not bring it back")

        let c = try create(in: site, 3)
        try sync(from: a, to: c)
        #expect(try c.itemState(x) == nil)
        #expect(try c.itemState(y) != nil)
    }

    /// A member back from away rejoins: its edits to an item the others purged meanwhile are
    /// dropped (the snapshot does not hold it), its item created while away is re-issued.
    @Test(arguments: StorageKind.all)
    func aRejoinDropsEditsToPurgedItemsAndKeepsItemsCreatedWhileAway(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-rejoin-purged")
        defer { site.close() }
        let a = try create(in: site, 1)
        let c = try create(in: site, 3)
        let (gone, fresh) = (ItemID.named("gone"), ItemID.named("fresh"))
        try a.apply(.create(type: "t", assignments: [.set(title, .string("one"))]), to: gone, wallMilliseconds: t0)
        try sync(from: a, to: c)
        try c.apply(.update([.set(title, .string("late"))]), to: gone, wallMilliseconds: t0 + 2)
        try c.apply(.create(type: "t", assignments: [.set(title, .string("new"))]), to: fresh, wallMilliseconds: t0 + 2)
        try c.apply(.update([.set(title, .string("newer"))]), to: fresh, wallMilliseconds: t0 + 3)

        try a.apply(.delete, to: gone, wallMilliseconds: t0 + 1)
        let now = WallClock.milliseconds
        try a.forgetMember(.node(3), at: now, dropPeer: true)
        _ = try a.collect(now: now)
        #expect(try a.collect(now: now + 1).collected == 1)
        #expect(try a.collect(now: now + 2 * CollectionSettings.day + 2).purged == 1)

        try c.rejoin(keepingUnseenBy: try a.versionVector(), adopting: [], now: now)
        try sync(from: a, to: c)
        let outcome = try #require(try c.reissueRejoinPending(now: now + 1))
        #expect(outcome.dropped == 1 && outcome.items == 1, "\(outcome)")
        #expect(try c.itemState(gone) == nil)
        #expect(try c.itemState(fresh)?.shownFields[title] == .string("newer"))
        try sync(from: c, to: a)
        #expect(try a.itemState(gone) == nil, "a deleted item never comes back")
        #expect(try a.itemState(fresh)?.type == "t")
    }

    /// A rejoin judges a collected item as it judges the same item not collected: its minimal
    /// tombstone keeps the `_type` that says who created it. An item this replica created and
    /// deleted while away is re-issued deleted (the property test's history: without the type,
    /// its delete was dropped, and a copy made before the delete came back to life); its
    /// delete of an item another member created is dropped, collected or not.
    @Test(arguments: StorageKind.all)
    func aRejoinJudgesACollectedItemAsTheSameItemNotCollected(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-rejoin-judged")
        defer { site.close() }
        let a = try create(in: site, 1)
        let b = try create(in: site, 2)
        let (theirs, mine) = (ItemID.named("theirs"), ItemID.named("mine"))
        try b.apply(.create(type: "t", assignments: [.set(title, .string("one"))]), to: theirs, wallMilliseconds: t0)
        var outcomes: [RejoinOutcome] = []
        var shown: [[ItemView?]] = []
        for (node, collects) in [(UInt64(3), true), (4, false)] {
            let c = try create(in: site, node)
            try sync(from: b, to: c)
            try c.apply(.delete, to: theirs, wallMilliseconds: t0 + 1)
            try c.apply(
                .create(type: "t", assignments: [.set(title, .string("x"))]),
                to: mine,
                wallMilliseconds: t0 + 1
            )
            let copy = try create(in: site, node + 10)
            try sync(from: c, to: copy)
            try c.apply(.delete, to: mine, wallMilliseconds: t0 + 2)
            if collects {
                let now = WallClock.milliseconds
                try c.forgetMember(.node(2), at: now, dropPeer: true)
                _ = try c.collect(now: now)
                #expect(try c.collect(now: now + 1).collected == 2, "both deleted items are collected")
                #expect(try c.itemState(mine)?.fields.keys.sorted() == [.deleted, .type])
            }
            try c.rejoin(keepingUnseenBy: try a.versionVector(), adopting: [], now: t0 + 3)
            try sync(from: a, to: c)
            outcomes.append(try #require(try c.reissueRejoinPending(now: t0 + 4)))
            // A copy of `mine` from before the delete meets the rejoined replica.
            try sync(from: copy, to: c)
            try sync(from: c, to: copy)
            #expect(try copy.itemState(mine)?.isDeleted == true, "the delete reached the copy")
            shown.append([try c.itemState(theirs)?.view, try c.itemState(mine)?.view])
        }
        #expect(outcomes[0] == outcomes[1], "\(outcomes)")
        #expect(outcomes[0].dropped == 1 && outcomes[0].items == 1, "\(outcomes[0])")
        #expect(shown[0] == shown[1], "collected or not, the same after the rejoin")
        #expect(shown[0][1]?.deleted == true && shown[0][1]?.type == "t")
    }

    /// A session that said hello before its replica rejoined from a snapshot records nothing of
    /// its peer's stream afterwards, checked in the very transaction that would: the peer planned
    /// from the vector the replica held before, and a resume from that progress (or its
    /// completion) would claim what the snapshot never brought.
    @Test(arguments: StorageKind.all)
    func aSessionFromBeforeARejoinRecordsNothing(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-session")
        defer { site.close() }
        let a = try create(in: site, 1)
        let b = try create(in: site, 2)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        let sender = try a.info()
        let begun = try b.sessionStart(with: sender.nodeID)
        var stream = try a.deltaStream(
            for: begun.vector,
            maxUpdates: batchSize,
            budgetBytes: 2 << 20,
            unclaimed: true,
            deltaBase: begun.vector
        )
        let batch = try #require(try stream.next(peerHolds: VersionVector()))
        _ = try b.rejoin(keepingUnseenBy: try a.versionVector(), adopting: [], now: WallClock.milliseconds)
        #expect(throws: StoreError.self) {
            try receive(
                batch,
                into: b,
                from: sender.nodeID,
                incarnation: sender.writerID,
                at: t0,
                rejoinedAt: begun.rejoinedAt,
                completingStream: false
            )
        }
        #expect(
            try b.sessionStart(with: sender.nodeID).resume == nil && b.itemState(x) == nil,
            "nothing of the batch was kept"
        )
        #expect(throws: StoreError.self) { try b.completeStream(from: sender.nodeID, rejoinedAt: begun.rejoinedAt) }
        // A session that begins after the rejoin records as ever.
        let again = try b.sessionStart(with: sender.nodeID)
        #expect(again.rejoinedAt != begun.rejoinedAt)
        try receive(
            batch,
            into: b,
            from: sender.nodeID,
            incarnation: sender.writerID,
            at: t0,
            rejoinedAt: again.rejoinedAt,
            completingStream: false
        )
        try b.completeStream(from: sender.nodeID, rejoinedAt: again.rejoinedAt)
        #expect(try b.itemState(x) != nil && b.versionVector()[sender.writerID] == 1)
    }

    /// Retired writers fold (Docs/MERGE.md): a replica folds its own writers but the current
    /// one once every member has seen all they wrote; a peer takes the folds its vector covers;
    /// a rejoin, which empties the vector, forgets them.
    @Test(arguments: StorageKind.all)
    func retiredWritersFoldOnceStableAndPeersTakeTheFolds(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-fold")
        defer { site.close() }
        let a = try create(in: site, 1)
        let b = try create(in: site, 2)
        let x = ItemID.named("x")
        let first = try a.apply(
            .create(type: "task", assignments: [.set(title, .string("one"))]),
            to: x,
            wallMilliseconds: t0
        )
        // A peer holds more of a's writer than a does (a copy put back, a rollback): the writer is
        // retired, and a's next edit takes a new one.
        #expect(try a.noteWitness(VersionVector([first.node: first.counter + 1])))
        try a.apply(.update([.set(title, .string("two"))]), to: x, wallMilliseconds: t0 + 1)
        let current = try a.info().writerID
        #expect(current != NodeID.node(1))
        try sync(from: a, to: b)
        #expect(try fold(a).folded.isEmpty, "nothing is stable before b reports")

        let now = WallClock.milliseconds
        try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: now)], gossiped: false)
        try a.collect(now: now)
        try a.collect(now: now + 1)
        // A writer that moved since the last round waits for a quiet one.
        let moving = VersionVector([.node(1): 0])
        #expect(try fold(a, unchangedSince: moving).folded.isEmpty)
        let (folded, read) = try fold(a, unchangedSince: try a.versionVector())
        #expect(read == (try a.versionVector()))
        #expect(folded == VersionVector([.node(1): 1]), "the first writer folds, the current one never")
        let told = try a.announcedVectors()
        #expect(told.folded == folded && told.vector.folded(by: told.folded) == VersionVector([current: 1]))
        #expect(try fold(a).folded.isEmpty, "a fold is taken once")

        // b takes the fold (it holds node 1's write); a replica that lacks it does not.
        let c = try create(in: site, 3)
        #expect(try b.adoptFolds(folded) == folded && b.announcedVectors().folded == folded)
        #expect(try c.adoptFolds(folded).isEmpty && c.announcedVectors().folded.isEmpty)
        #expect(try b.adoptFolds(folded).isEmpty, "taken once")

        // A report told without its teller's folds is joined back with them, for the writers
        // this replica knows only: a hello cannot make it hold more.
        let madeUp = NodeID(high: NodeID.node(1).high, low: 999)
        try b.recordReports(
            [
                MemberReport(
                    nodeID: .node(1),
                    seen: VersionVector([current: 1]),
                    at: now,
                    folds: VersionVector([.node(1): 1, madeUp: 9])
                )
            ],
            gossiped: true
        )
        #expect(
            try b.memberReports().first { $0.nodeID == .node(1) }?.seen == VersionVector([current: 1, .node(1): 1])
        )

        // A rejoin empties the vector, and the folds with it.
        _ = try b.rejoin(keepingUnseenBy: try a.versionVector(), adopting: [], now: now)
        #expect(try b.announcedVectors().folded.isEmpty)
    }

    /// A replica put back from a copy older than the away window is stale until it rejoins; one
    /// that merely stayed alone that long is not. (Times are counted from now on, and the last
    /// sync is set no earlier than the replica's creation: a PostgreSQL replica's first writer
    /// starts when it is made, a SQLite file's at 0.)
    @Test(arguments: StorageKind.all)
    func aReplicaPutBackFromAnOldCopyIsStale(kind: StorageKind) throws {
        let site = try StorageSite(kind, "collect-stale")
        defer { site.close() }
        let a = try create(in: site, 1)
        let day = CollectionSettings.day
        // After the replica was made, and its first writer started.
        let now = WallClock.milliseconds
        #expect(try a.staleSince(now: now + 10 * day) == nil, "never met anyone")
        // Last up to date a day from now: the writer started before, as for a replica alone.
        try a.savePeer(PeerRecord(nodeID: .node(2), name: "b", address: nil, source: .configured, lastSync: now + day))
        #expect(try a.staleSince(now: now + 3 * day) == nil, "alone, not put back")
        // Last up to date now, judged two days later, and no writer started since.
        try a.savePeer(PeerRecord(nodeID: .node(2), name: "b", address: nil, source: .configured, lastSync: now))
        #expect(try a.staleSince(now: now + 2 * day) == nil, "no writer started since")
        // A writer started since (a copy put back, a reboot): a peer holds more of the writer
        // than the replica, and the replica renews it, a millisecond after the last sync at least.
        while WallClock.milliseconds <= now { Thread.sleep(forTimeInterval: 0.001) }
        let writer = try a.info().writerID
        #expect(try a.noteWitness(VersionVector([writer: try a.versionVector()[writer] + 1])))
        #expect(try a.renewWriterIfUnproven() != writer)
        #expect(try a.staleSince(now: now + 2 * day) == now)
        #expect(try a.staleSince(now: now + day - 1) == nil, "within the window")
        #expect(try a.collectionFigures(now: now + 2 * day).awaySince == now)
        // Rejoining makes it current again.
        try a.rejoin(keepingUnseenBy: VersionVector(), adopting: [], now: now + 2 * day)
        #expect(try a.staleSince(now: now + 2 * day) == nil)
    }

    /// Issue 63: a stale replica (a copy put back) judges no member away, so it collects nothing
    /// without them: once it rejoins from one of them, they would not hold what it collected. An
    /// operator's word that the copy is current (`lansync backup accept`) ends the staleness, and
    /// the replica judges as any current one again.
    // SQLite only: acceptAsCurrent(now:) (`lansync backup accept`) is the SQLite store's alone, not in ReplicaStorage.
    @Test func aStaleReplicaCollectsNothingWithoutTheOthersUntilAccepted() throws {
        let a = try create(1)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 1)
        let day = CollectionSettings.day
        let now = WallClock.milliseconds
        #expect(try a.acceptAsCurrent(now: now) == nil, "not stale: nothing to accept")
        // Last up to date three days ago; b last heard of then too, and a writer started since.
        try a.savePeer(
            PeerRecord(nodeID: .node(2), name: "b", address: nil, source: .configured, lastSync: now - 3 * day)
        )
        try a.recordReports([MemberReport(nodeID: .node(2), seen: VersionVector(), at: now - 3 * day)])
        let elsewhere = makeTemporaryDirectory("collect-stale-elsewhere")
        let putBack = try ReplicaStore.open(path: "\(dir)/r1.sqlite", lease: WriterLease(directory: elsewhere))
        _ = try putBack.renewWriterIfUnproven()
        #expect(try a.staleSince(now: now) == now - 3 * day)
        for step in UInt64(0)..<3 { #expect(try a.collect(now: now + step).collected == 0, "b still holds it back") }
        #expect(try a.collectionFigures(now: now).heldBackBy == .node(2))
        #expect(try a.collectionFigures(now: now).staleSince == now - 3 * day)
        #expect(try a.acceptAsCurrent(now: now + 3) == now - 3 * day)
        #expect(try a.collectionFigures(now: now + 4).staleSince == nil)
        #expect(try a.staleSince(now: now + 4) == nil)
        // The operator's word counts as news: not away itself either, so it judges b away.
        #expect(try a.awaySince(now: now + 4) == nil)
        #expect(try a.collectionFigures(now: now + 4).departed == [.node(2)])
        _ = try a.collect(now: now + 4)
        #expect(try a.collect(now: now + 5).collected == 1, "current again: b, away, is refused until it rejoins")
    }
}
