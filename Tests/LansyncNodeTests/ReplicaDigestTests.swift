import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Synchronization
import Testing

@testable import LansyncNode

/// A running node's digest, kept from one `status` to the next, is the digest read afresh from
/// every item after each kind of change (edits, deletes, retypes, unsets, merged conflicts, a
/// purge that removes an item whole), and it reads only what changed when it can.
@Suite struct ReplicaDigestTests {
    let dir = makeTemporaryDirectory("digest")
    let t0: UInt64 = 1_700_000_000_000
    let title = FieldName.named("title")

    func store(_ node: UInt64) throws -> ReplicaStore {
        try SessionRunnerTests.store(dir, "r\(node)", node: .node(node), cluster: .node(99))
    }

    func sync(_ from: ReplicaStore, _ to: ReplicaStore) throws {
        let held = try to.versionVector()
        var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: held)
        while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: t0) }
    }

    @Test func theKeptDigestIsTheDigestOfEveryItemAfterEachChange() throws {
        let a = try store(1)
        let b = try store(2)
        // Deleted items collected at once, purged a day after a member was last seen.
        try a.setCollectionSettings(CollectionSettings(trashWindow: 0, awayAfter: CollectionSettings.day))
        let cache = ReplicaDigest.Cache()
        func check(_ step: String, read expected: Int? = nil) throws {
            #expect(try cache.digest(a) == ReplicaDigest.compute(a), "\(step)")
            if let expected { #expect(cache.itemsRead.withLock { $0 } == expected, "\(step): items read") }
        }
        let empty = try cache.digest(a)
        for i in 0..<40 {
            try a.apply(
                .create(type: "task", assignments: [.set(title, .string("item \(i)"))]),
                to: .named("i\(i)"),
                wallMilliseconds: t0
            )
        }
        try check("40 items", read: 40)
        #expect(try cache.digest(a) != empty)
        let before = try cache.digest(a)
        try check("nothing changed")
        #expect(try cache.digest(a) == before)

        try a.apply(.update([.set(title, .string("changed"))]), to: .named("i3"), wallMilliseconds: t0)
        try check("an edit", read: 1)
        #expect(try cache.digest(a) != before)
        try a.apply(.delete, to: .named("i4"), wallMilliseconds: t0)
        try check("a delete", read: 1)
        try a.apply(.retype("note"), to: .named("i5"), wallMilliseconds: t0)
        try a.apply(.update([.unset(title)]), to: .named("i6"), wallMilliseconds: t0)
        try check("a retype and an unset", read: 2)

        // A conflict merged from b: b's replica, once equal, has the same digest.
        try sync(a, b)
        try a.apply(.update([.set(title, .string("from a"))]), to: .named("i7"), wallMilliseconds: t0 + 1)
        try b.apply(.update([.set(title, .string("from b"))]), to: .named("i7"), wallMilliseconds: t0 + 2)
        try sync(b, a)
        try sync(a, b)
        #expect(try a.conflicts().map(\.item) == [.named("i7")])
        try check("a merged conflict")
        #expect(try cache.digest(a) == ReplicaDigest.compute(b), "converged replicas, equal digests")

        // A purge removes the deleted item whole, with nothing in the feed: every item is read.
        let now = WallClock.milliseconds
        let day = CollectionSettings.day
        for at in [now, now + 1, now + day + 2, now + 2 * day + 2] {
            try a.recordReports([MemberReport(nodeID: .node(2), seen: try b.versionVector(), at: at)])
            _ = try a.collect(now: at)
        }
        #expect(try a.itemState(.named("i4")) == nil, "the tombstone is purged")
        try check("a purge", read: 39)
    }
}
