import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

/// A reader's replica and a reader's writes (Docs/SECURITY.md, "Roles"), on every store: the
/// replica refuses local edits and changes nothing; made a writer again it writes under a new
/// writer, and a reader cut that keeps unnamed writers refuses the old writer's later writes
/// and keeps the new one's.
@Suite(.computeBound) struct ReaderRoleTests {
    let x = ItemID.named("x")
    let title = FieldName.named("title")
    let t0: UInt64 = 1_700_000_000_000

    func receive(_ from: any ReplicaStorage, into to: any ReplicaStorage, revoked: RevokedWriters) throws {
        try syncAsASession(from, to, batchSize: 100, deltas: false, wallMilliseconds: t0 + 10, revoked: revoked)
    }

    @Test(arguments: StorageKind.all)
    func aReadersReplicaRefusesEditsAndWritesAnewOnceItMayWrite(kind: StorageKind) throws {
        let site = try StorageSite(kind, "reader")
        defer { site.close() }
        let reader = try site.replica(1)
        let other = try site.replica(2)
        let first = try reader.apply(
            .create(type: "t", assignments: [.set(title, .string("kept"))]),
            to: x,
            wallMilliseconds: t0
        )
        try receive(reader, into: other, revoked: RevokedWriters())
        // The cut other's authority signed: what it held of the reader's writer.
        let cut = RevokedWriters.Cut(
            node: .node(1),
            counters: [first.node: first.counter],
            reason: "written by reader node r1"
        )

        try reader.setReadOnly("made a reader at T by r2", retiring: [])
        #expect(try reader.readOnlyReason() == "made a reader at T by r2")
        let vector = try reader.versionVector()
        #expect(throws: StoreError.readOnly(why: "made a reader at T by r2")) {
            try reader.apply(.update([.set(title, .string("refused"))]), to: x, wallMilliseconds: t0 + 1)
        }
        #expect(try reader.versionVector() == vector, "a refused edit changes nothing")
        #expect(StoreError.readOnly(why: "w").code == .readOnly)

        try reader.setReadOnly(nil, retiring: [])
        #expect(try reader.readOnlyReason() == nil)
        let again = try reader.apply(.update([.set(title, .string("again"))]), to: x, wallMilliseconds: t0 + 2)
        #expect(again.node != first.node && again.node.isWriter(of: .node(1)), "a new writer of the same node")
        #expect(try reader.writers().last?.reason == .role)
        // A writer again: the old writer's later writes stay refused, the new writer's count.
        let keeps = RevokedWriters([
            RevokedWriters.Cut(node: .node(1), counters: cut.counters, keepsUnnamed: true, reason: cut.reason)
        ])
        #expect(keeps.refusal(of: Dot(node: first.node, counter: first.counter + 1)) != nil)
        #expect(keeps.refusal(of: first) == nil && keeps.refusal(of: again) == nil)
        #expect(keeps.names(first.node) && !keeps.names(again.node))
        try receive(reader, into: other, revoked: keeps)
        #expect(try other.itemState(x)?.fields[title]?.shownValue == .string("again"))
        // While a reader, a writer the cut does not name keeps nothing.
        let refuses = RevokedWriters([RevokedWriters.Cut(node: .node(1), counters: cut.counters, reason: cut.reason)])
        #expect(refuses.refusal(of: again) != nil)
    }

    /// A replica never marked read-only (offline for the whole time its member was a reader)
    /// still leaves a writer a reader cut names; a peer's witness of a rollback keeps its mark.
    @Test(arguments: StorageKind.all)
    func aWriterACutNamesIsLeftEvenWithoutReadOnly(kind: StorageKind) throws {
        let site = try StorageSite(kind, "cut-writer")
        defer { site.close() }
        let store = try site.replica(1)
        let first = try store.apply(.create(type: "t", assignments: []), to: x, wallMilliseconds: t0)
        try store.setReadOnly(nil, retiring: [NodeID.writer(for: .node(1))])
        let same = try store.apply(.update([.set(title, .integer(1))]), to: x, wallMilliseconds: t0 + 1)
        #expect(same.node == first.node, "a cut of another writer leaves this one")
        try store.setReadOnly(nil, retiring: [first.node])
        let next = try store.apply(.update([.set(title, .integer(2))]), to: x, wallMilliseconds: t0 + 2)
        #expect(next.node != first.node)
        #expect(try store.writers().last?.reason == .role)
    }
}
