import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

/// Rolled-back replicas (DESIGN invariant 8), as examples; ``ConvergenceTests`` runs random
/// histories with snapshots and rollbacks.
@Suite struct RollbackTests {
    let t0: UInt64 = 1_700_000_000_000
    let title = FieldName.named("title")

    /// A session both ways, as the node runs it (hellos, resume, streams counted when complete).
    func sync(_ a: inout Replica, _ b: inout Replica) {
        b.observe(peer: a.versionVector)
        a.observe(peer: b.versionVector)
        stream(from: a, to: &b)
        stream(from: b, to: &a)
    }

    func stream(from a: Replica, to b: inout Replica, deliver: Int = .max) {
        b.meet(a.nodeID, incarnation: a.writer)
        let resume = b.resume(from: a.nodeID)
        let start = StreamResume.start(
            receiver: b.versionVector,
            resume: resume?.covers ?? VersionVector(),
            resumeFor: resume?.incarnation,
            senderWriter: a.writer
        )
        let batches = a.delta(for: start, maxUpdates: 1)
        for batch in batches.prefix(deliver) {
            b.apply(batch, from: a.nodeID, incarnation: a.writer, wallMilliseconds: t0)
        }
        if deliver >= batches.count { b.completeStream(from: a.nodeID) }
    }

    /// The scenario: B is restored from a copy, edits once offline, then syncs. With a new
    /// writer after the restore, A sends back what B lost and both show the same.
    @Test func aRestoredReplicaThatEditedOfflineGetsBackWhatItLost() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        try b.apply(
            .create(type: "t", assignments: [.set(.named("v"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        sync(&a, &b)
        let backup = b
        try b.apply(.update([.set(.named("after"), .integer(1))]), to: .named("x"), wallMilliseconds: t0 + 1)
        sync(&a, &b)
        b = backup
        // The marker outside the files recorded the change count after B's second edit; the
        // restored B counts fewer: a new writer.
        #expect(!WriterContinuity.isProven(marker: backup.changes + 1, held: b.changes))
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
        try b.apply(
            .create(type: "t", assignments: [.set(title, .string("lost?"))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        sync(&a, &b)
        b = backup
        b.observe(peer: a.versionVector)
        #expect(b.writerRetired)
        b.startWriter(.node(21))
        let dot = try b.apply(
            .create(type: "t", assignments: [.set(title, .string("new"))]),
            to: .named("y"),
            wallMilliseconds: t0
        )
        #expect(dot == Dot(node: .node(21), counter: 1))
        sync(&a, &b)
        #expect(a.items == b.items)
        #expect(b.items[.named("x")]?.view.fields[title] == .string("lost?"))
    }

    /// A streams part of a delta to B and is rolled back before anyone else gets the rest. B must
    /// not claim what the stream covered (a newer state of x.f was still to come, and is lost), or
    /// C's older x.f would never reach it; nor resume from A's new incarnation.
    @Test func interruptedStreamFromARolledBackSender() throws {
        var a = Replica(nodeID: .node(1))
        var b = Replica(nodeID: .node(2))
        var c = Replica(nodeID: .node(3))
        try a.apply(
            .create(type: "t", assignments: [.set(.named("f"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        sync(&a, &c)
        let backup = a
        try a.apply(
            .create(type: "t", assignments: [.set(.named("g"), .integer(2))]),
            to: .named("y"),
            wallMilliseconds: t0 + 1
        )
        try a.apply(.update([.set(.named("f"), .integer(3))]), to: .named("x"), wallMilliseconds: t0 + 2)
        stream(from: a, to: &b, deliver: 1)
        #expect(b.versionVector.isEmpty, "an interrupted stream is not counted")
        #expect(b.resume(from: a.nodeID) != nil)
        a = backup
        a.startWriter(.node(10))
        for _ in 0..<3 {
            sync(&a, &b)
            sync(&b, &c)
            sync(&a, &c)
        }
        #expect(b.items == c.items)
        #expect(a.items == b.items)
        #expect(a.versionVector == b.versionVector && b.versionVector == c.versionVector)
    }
}
