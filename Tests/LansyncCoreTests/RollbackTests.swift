import LansyncCore
import LansyncTestSupport
import Testing

/// Rolled-back replicas (DESIGN invariant 8), as examples; ``ConvergenceTests`` runs random
/// histories with snapshots and rollbacks.
@Suite struct RollbackTests {
    let t0: UInt64 = 1_700_000_000_000
    let title = FieldName.named("title")

    func sync(_ a: inout Replica, _ b: inout Replica) {
        b.observe(peer: a.versionVector)
        a.observe(peer: b.versionVector)
        for batch in a.delta(for: b.versionVector) { b.apply(batch, wallMilliseconds: t0) }
        for batch in b.delta(for: a.versionVector) { a.apply(batch, wallMilliseconds: t0) }
    }

    /// The issue's scenario: B is restored from a copy, edits once offline, then syncs. With a new
    /// writer after the restore, A sends back what B lost and both show the same.
    @Test func aRestoredReplicaThatEditedOfflineGetsBackWhatItLost() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        try b.apply(.create(type: "t", assignments: [.set(.named("v"), .integer(1))]), to: .named("x"), wallMilliseconds: t0)
        sync(&a, &b)
        let backup = b
        try b.apply(.update([.set(.named("after"), .integer(1))]), to: .named("x"), wallMilliseconds: t0 + 1)
        sync(&a, &b)
        b = backup
        // The marker outside the files says B's writer issued 2; B holds 1: a new writer.
        #expect(!WriterContinuity.isProven(marker: 2, held: b.versionVector[b.writer]))
        b.startWriter(.node(20))
        try b.apply(.update([.set(.named("new"), .integer(2))]), to: .named("x"), wallMilliseconds: t0 + 2)
        sync(&a, &b)
        #expect(a.items == b.items)
        #expect(b.views.first?.fields.keys.map(\.rawValue).sorted() == ["after", "new", "v"])
        #expect(a.versionVector == b.versionVector)
    }

    /// Without a marker (the copy is used on another boot), the peer is the witness: a restored
    /// replica that has not written yet learns from the hello that it lost writes, and its next
    /// write starts a new writer, so the lost dots are never issued again.
    @Test func aPeerWitnessRetiresTheWriter() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        let backup = b
        try b.apply(.create(type: "t", assignments: [.set(title, .string("lost?"))]), to: .named("x"), wallMilliseconds: t0)
        sync(&a, &b)
        b = backup
        b.observe(peer: a.versionVector)
        #expect(b.writerRetired)
        b.startWriter(.node(21))
        let dot = try b.apply(.create(type: "t", assignments: [.set(title, .string("new"))]), to: .named("y"), wallMilliseconds: t0)
        #expect(dot == Dot(node: .node(21), counter: 1))
        sync(&a, &b)
        #expect(a.items == b.items)
        #expect(b.items[.named("x")]?.view.fields[title] == .string("lost?"))
    }

    /// Known gap: A streams part of a delta to B, is rolled back before anyone else gets the rest,
    /// then everyone syncs. B's vector claims writes whose newest field states were lost with A's
    /// rollback, so a third replica's older state of such a field is never sent to B. Recorded as
    /// a known issue until stream progress is kept apart from the vector (issue 12's note).
    @Test func interruptedStreamFromARolledBackSender() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        var c = Replica(nodeID: .node(3))
        try a.apply(.create(type: "t", assignments: [.set(.named("f"), .integer(1))]), to: .named("x"), wallMilliseconds: t0)
        sync(&a, &c)
        let backup = a
        try a.apply(.create(type: "t", assignments: [.set(.named("g"), .integer(2))]), to: .named("y"), wallMilliseconds: t0 + 1)
        try a.apply(.update([.set(.named("f"), .integer(3))]), to: .named("x"), wallMilliseconds: t0 + 2)
        let batches = a.delta(for: b.versionVector, maxUpdates: 1)
        b.apply(batches[0], wallMilliseconds: t0)
        a = backup
        a.startWriter(.node(10))
        for _ in 0..<3 {
            sync(&a, &b)
            sync(&b, &c)
            sync(&a, &c)
        }
        withKnownIssue("a partial stream from a sender that is then rolled back leaves its receiver apart") {
            #expect(b.items == c.items)
        }
    }
}
