import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

/// Deltas are proportional to what the receiver lacks, bounded per batch, and resumable.
@Suite struct DeltaTests {
    let t0: UInt64 = 1_700_000_000_000

    func replica(items: Int, fieldsEach: Int = 3) throws -> Replica {
        var r = Replica(nodeID: .node(1))
        for i in 0..<items {
            let assignments = (0..<fieldsEach).map { Assignment.set(.named("f\($0)"), .integer(Int64(i))) }
            try r.apply(.create(type: "task", assignments: assignments), to: .named("item\(i)"), wallMilliseconds: t0)
        }
        return r
    }

    @Test func idleRoundSendsNothing() throws {
        let a = try replica(items: 50)
        #expect(a.delta(for: a.versionVector).isEmpty)
    }

    @Test func oneEditSendsOnlyItsFields() throws {
        var a = try replica(items: 200)
        let before = a.versionVector
        try a.apply(.update([.set(.named("f1"), .string("changed"))]), to: .named("item7"), wallMilliseconds: t0 + 1)
        let delta = a.delta(for: before)
        #expect(delta.count == 1)
        #expect(delta[0].updates.map(\.key) == [FieldKey(item: .named("item7"), field: .named("f1"))])
        #expect(delta[0].covers == a.versionVector)
    }

    @Test func batchesAreBoundedAndNeverSplitAWrite() throws {
        let a = try replica(items: 40, fieldsEach: 3)  // each write touches 4 fields (with _type)
        let batches = a.delta(for: VersionVector(), maxUpdates: 10)
        #expect(batches.allSatisfy { $0.updates.count <= 10 })
        for batch in batches {
            let items = Set(batch.updates.map(\.key.item))
            for item in items { #expect(batch.updates.filter { $0.key.item == item }.count == 4) }
        }
        #expect(batches.reduce(0) { $0 + $1.updates.count } == 160)
    }

    @Test func anInterruptedSyncResumesWithoutResending() throws {
        let a = try replica(items: 100)
        var b = Replica(nodeID: .node(2))
        let first = a.delta(for: b.versionVector, maxUpdates: 40)
        for batch in first.prefix(3) { b.apply(batch, wallMilliseconds: t0) }
        let alreadySent = Set(first.prefix(3).flatMap { $0.updates.map(\.key) })
        let rest = a.delta(for: b.versionVector, maxUpdates: 40)
        let resent = Set(rest.flatMap { $0.updates.map(\.key) }).intersection(alreadySent)
        #expect(resent.isEmpty)
        for batch in rest { b.apply(batch, wallMilliseconds: t0) }
        #expect(b.items == a.items)
        #expect(b.versionVector == a.versionVector)
    }

    @Test func aWriteLargerThanABatchTravelsWhole() throws {
        var a = Replica(nodeID: .node(1))
        let assignments = (0..<30).map { Assignment.set(.named("f\($0)"), .integer(Int64($0))) }
        try a.apply(.create(type: "wide", assignments: assignments), to: .named("wide"), wallMilliseconds: t0)
        let batches = a.delta(for: VersionVector(), maxUpdates: 8)
        #expect(batches.count == 1 && batches[0].updates.count == 31)
    }
}
