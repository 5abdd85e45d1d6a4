import Foundation
import GRDB
import LansyncCore
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// A revoked node's writes after its revocation's cut (``RevokedWriters``) are overruled wherever
/// they arrive, and wherever they were taken in before the revocation: the fields keep their
/// earlier values, the items it created go to the bin, what it wrote before the cut stays, and
/// replicas that overrule independently still converge.
@Suite struct RevokedWritesTests: ReplicaFixture {
    let batchSize = 3
    let dir = makeTemporaryDirectory("revoked")
    let x = ItemID.named("x")
    let y = ItemID.named("y")
    let z = ItemID.named("z")
    let title = FieldName.named("title")
    let tags = FieldName.named("tags")

    func shown(_ store: ReplicaStore, _ id: ItemID, _ field: FieldName) throws -> Value? {
        try store.itemState(id)?.fields[field]?.shownValue
    }

    /// The cut `revoker` would sign for `node`: what it holds of each of the node's writers.
    func cut(of node: NodeID, at revoker: ReplicaStore) throws -> RevokedWriters {
        let held = try revoker.versionVector()
        return RevokedWriters([
            .init(
                node: node,
                counters: Dictionary(uniqueKeysWithValues: held.nodes.map { ($0, held[$0]) }),
                reason: "written by revoked node \(node.short) after its revocation: lost"
            )
        ])
    }

    /// a and c share items; c edits one (kept: before the cut), is revoked, then edits it again,
    /// deletes the other, adds a list element and creates an item, the last two after a reboot
    /// (a new writer id).
    func revokedScenario() throws -> (a: ReplicaStore, c: ReplicaStore, revoked: RevokedWriters) {
        let a = try replica(1)
        let c = try replica(3)
        try a.apply(
            .create(type: "task", assignments: [.set(title, .string("old")), .set(tags, .list([.string("a")]))]),
            to: x,
            wallMilliseconds: t0
        )
        try a.apply(.create(type: "task", assignments: []), to: z, wallMilliseconds: t0)
        try sync(a, c)
        try c.apply(.update([.set(title, .string("before"))]), to: x, wallMilliseconds: t0 + 1)
        try sync(c, a)
        let revoked = try cut(of: .node(3), at: a)
        try c.apply(.update([.set(title, .string("after"))]), to: x, wallMilliseconds: t0 + 2)
        try c.apply(.delete, to: z, wallMilliseconds: t0 + 2)
        let rebooted = try ReplicaStore.open(
            path: "\(dir)/r3.sqlite",
            lease: WriterLease(directory: dir, bootID: "another-boot")
        )
        let dot = try rebooted.apply(.update([.add(tags, .string("z"))]), to: x, wallMilliseconds: t0 + 3)
        #expect(dot.node != NodeID.node(3) && dot.node.isWriter(of: .node(3)), "a new writer id names its node")
        try rebooted.apply(
            .create(type: "task", assignments: [.set(title, .string("planted"))]),
            to: y,
            wallMilliseconds: t0 + 4
        )
        return (a, rebooted, revoked)
    }

    @Test func writesAfterTheCutAreOverruledOnArrival() throws {
        let (a, c, revoked) = try revokedScenario()
        try sync(c, a, revoked: revoked)
        #expect(try shown(a, x, title) == .string("before"), "the edit before the cut stays, the later one does not")
        #expect(try shown(a, x, tags) == .list([.string("a")]), "an element added after the cut is refused")
        #expect(try a.itemState(y)?.isDeleted == true, "an item created after the cut goes to the bin")
        #expect(try a.itemState(z)?.isDeleted == false, "an item deleted after the cut stays")
        #expect(try a.storedItem(z)?.deleted == false && a.storedItem(y)?.deleted == true, "derived columns")
        let rejected = try a.revokedWriteRejections()
        #expect(Set(rejected.map(\.field.rawValue)) == ["title", "tags", "_deleted"])
        #expect(rejected.allSatisfy { $0.reason.hasPrefix("written by revoked node ") })
        #expect(
            try a.history(x, field: title).contains { $0.write == .assign(.string("after")) },
            "history still shows the refused value"
        )
        // Applying the same writes again changes nothing: they are overruled for good.
        let version = try a.versionVector()
        try sync(c, a, revoked: revoked)
        #expect(try a.versionVector() == version)
    }

    /// A member that took the writes in before it held the revocation overrules them when it
    /// arrives; a member that refused them on arrival ends up with the same values, and the two
    /// converge when they sync.
    @Test func writesTakenInBeforeTheRevocationAreOverruledWhenItArrives() throws {
        let (a, c, revoked) = try revokedScenario()
        let b = try replica(2)
        try sync(a, b)
        try sync(c, b)
        #expect(try shown(b, x, title) == .string("after"), "without the revocation, b takes the edit")
        #expect(try b.overruleRevokedWrites(revoked, wallMilliseconds: t0 + 10) == 5, "four fields, one item")
        #expect(try b.itemState(z)?.isDeleted == false && b.storedItem(z)?.deleted == false)
        #expect(try shown(b, x, title) == .string("before"))
        #expect(try shown(b, x, tags) == .list([.string("a")]))
        #expect(try b.itemState(y)?.isDeleted == true)
        #expect(try b.overruleRevokedWrites(revoked, wallMilliseconds: t0 + 11) == 0, "once is enough")
        try sync(c, a, revoked: revoked)
        try sync(a, b, revoked: revoked)
        try sync(b, a, revoked: revoked)
        for (id, field) in [(x, title), (x, tags), (y, title), (z, .deleted)] {
            #expect(try shown(a, id, field) == shown(b, id, field), "\(id.rawValue).\(field.rawValue)")
        }
        #expect(try a.itemState(y)?.isDeleted == true && b.itemState(y)?.isDeleted == true)
        #expect(try a.conflicts().isEmpty && b.conflicts().isEmpty, "the two overrules keep the same value")
    }

    /// A replica whose writer id was taken before writer ids named their node takes one that
    /// does at its next write.
    @Test func anUnnamedWriterIsReplaced() throws {
        do {
            let store = try replica(4)
            try store.apply(.create(type: "t", assignments: []), to: x, wallMilliseconds: t0)
        }
        let legacy = NodeID.random()
        let queue = try DatabaseQueue(path: "\(dir)/r4.sqlite")
        try queue.write { db in
            try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'writer_id'", arguments: [legacy.text])
        }
        try queue.close()
        let store = try ReplicaStore.open(path: "\(dir)/r4.sqlite", lease: lease)
        let dot = try store.apply(.update([.set(title, .integer(1))]), to: x, wallMilliseconds: t0)
        #expect(dot.node != legacy && dot.node.isWriter(of: .node(4)))
        #expect(try store.writers().last?.reason == .named)
    }
}
