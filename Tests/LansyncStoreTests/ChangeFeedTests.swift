import Foundation
import GRDB
import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// The change feed: every field change a replica commits, local or merged, in commit order, with
/// numbers that only grow, across reopening and a restore from a backup; a field shows once, at
/// its latest change.
@Suite struct ChangeFeedTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("feed")
    let title = FieldName.named("title")

    func kinds(_ entries: [ChangeEntry]) -> [String] { entries.map { "\($0.field.rawValue):\($0.kind.name)" } }

    @Test func localAndMergedChangesAreFedInOrder() throws {
        let a = try replica(1)
        let b = try replica(2)
        let x = ItemID.named("x")
        // Each change in turn, as a follower that keeps up sees them.
        var local: [ChangeEntry] = []
        var seen: UInt64 = 0
        func look() throws {
            let new = try a.changes(since: seen)
            local += new
            seen = new.last?.seq ?? seen
        }
        try a.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try look()
        try a.apply(.update([.set(title, .string("two"))]), to: x, wallMilliseconds: t0 + 1)
        try look()
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 2)
        try look()
        try a.apply(.restore, to: x, wallMilliseconds: t0 + 3)
        try look()
        #expect(kinds(local) == ["_type:create", "title:edit", "title:edit", "_deleted:delete", "_deleted:restore"])
        #expect(local.map(\.seq) == Array(1...5), "numbered in commit order")
        #expect(local[2].value?.jsonText == "\"two\"" && local[0].type == "task" && local.allSatisfy { $0.item == x })

        try sync(a, b)
        let merged = try b.changes(since: 0)
        #expect(Set(kinds(merged)) == ["_type:create", "title:merge", "_deleted:merge"], "\(kinds(merged))")
        // Concurrent edits: a conflict, then its settlement, each once.
        try a.apply(.update([.set(title, .string("from a"))]), to: x, wallMilliseconds: t0 + 4)
        try b.apply(.update([.set(title, .string("from b"))]), to: x, wallMilliseconds: t0 + 4)
        let before = try b.latestChangeSeq()
        try sync(a, b)
        #expect(kinds(try b.changes(since: before)) == ["title:conflict"])
        try b.apply(.resolve(title, .string("both")), to: x, wallMilliseconds: t0 + 5)
        let settled = try b.changes(since: before + 1)
        #expect(kinds(settled) == ["title:settle"] && settled[0].value?.jsonText == "\"both\"")

        // Filters.
        try a.apply(
            .create(type: "note", assignments: [.set(title, .string("n"))]),
            to: .named("y"),
            wallMilliseconds: t0
        )
        #expect(try a.changes(since: 0, type: "note").map(\.item) == [.named("y"), .named("y")])
        #expect(try a.changes(since: 0, item: x, field: title).count == 1, "a field once, at its latest")
        #expect(try a.changes(since: 0, limit: 2).map(\.seq) == [1, 5], "_type (1), then _deleted (5): title moved on")
    }

    @Test func numbersAreNeverGivenTwice() throws {
        let path = "\(dir)/r1.sqlite"
        var seqs: [UInt64] = []
        do {
            let a = try replica(1)
            try a.apply(
                .create(type: "t", assignments: [.set(title, .integer(0))]),
                to: .named("x"),
                wallMilliseconds: t0
            )
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: "\(dir)/backup.sqlite" + suffix)
            }
            for i in 1...3 {
                try a.apply(.update([.set(title, .integer(Int64(i)))]), to: .named("x"), wallMilliseconds: t0)
            }
            seqs = [try a.latestChangeSeq()]
        }
        // Reopened: the numbering goes on.
        let reopened = try ReplicaStore.open(path: path, lease: lease)
        try reopened.apply(.update([.set(title, .integer(4))]), to: .named("x"), wallMilliseconds: t0)
        #expect(try reopened.changes(since: seqs.last!).map(\.seq) == [seqs.last! + 1])
        let highest = try reopened.latestChangeSeq()

        // Restored from the backup (which stopped at 2): the next number is past every one given.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: "\(dir)/backup.sqlite" + suffix) {
            try FileManager.default.copyItem(atPath: "\(dir)/backup.sqlite" + suffix, toPath: path + suffix)
        }
        let restored = try ReplicaStore.open(path: path, lease: lease)
        #expect(try restored.latestChangeSeq() < highest, "the backup's own numbering")
        try restored.apply(.update([.set(title, .integer(5))]), to: .named("x"), wallMilliseconds: t0)
        let after = try restored.changes(since: highest)
        #expect(after.count == 1 && after[0].seq > highest, "\(after.map(\.seq)) after \(highest)")
    }

    /// A field changed twice since a reader looked shows once, at its latest change.
    @Test func aFieldShowsOnceAtItsLatestChange() throws {
        let a = try replica(1)
        try a.apply(.create(type: "t", assignments: [.set(title, .integer(0))]), to: .named("x"), wallMilliseconds: t0)
        let seen = try a.latestChangeSeq()
        try a.apply(.update([.set(title, .integer(1))]), to: .named("x"), wallMilliseconds: t0)
        try a.apply(.update([.set(title, .integer(2))]), to: .named("x"), wallMilliseconds: t0)
        let after = try a.changes(since: seen)
        #expect(after.map(\.value?.jsonText) == ["2"] && after[0].seq == seen + 2, "\(after)")
        #expect(try a.changes(since: 0).count == 2, "_type and title, each once")
    }

    /// The feed's two queries read the index of numbers, not every field: one that scanned made a
    /// first sync of 100,000 items seven times slower.
    @Test func theFeedReadsItsIndex() throws {
        let a = try replica(1)
        let query = Transaction.changesQuery(since: 5, limit: 10, type: nil, item: nil, field: .named("title"))
        let plans = try a.read { db in
            [
                try String(describing: Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + Transaction.latestSeqSQL)),
                try String(
                    describing: Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: query.arguments)
                ),
            ]
        }
        for plan in plans { #expect(plan.contains("field_by_seq"), "\(plan)") }
    }
}
