import Foundation
import GRDB
import LansyncCore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// A revoked node's writes after its revocation's cut (``RevokedWriters``) are overruled wherever
/// they arrive, and wherever they were taken in before the revocation, on every store: the fields
/// keep their earlier values, the items it created go to the bin, what it wrote before the cut
/// stays, and replicas that overrule independently still converge.
@Suite(.computeBound) struct RevokedWritesTests {
    let dir = makeTemporaryDirectory("revoked")
    let t0: UInt64 = 1_700_000_000_000
    let x = ItemID.named("x")
    let y = ItemID.named("y")
    let z = ItemID.named("z")
    let title = FieldName.named("title")
    let tags = FieldName.named("tags")

    func shown(_ store: any ReplicaStorage, _ id: ItemID, _ field: FieldName) throws -> Value? {
        try store.itemState(id)?.fields[field]?.shownValue
    }

    /// The item as the store's read model holds it (its derived columns).
    func stored(_ store: any ReplicaStorage, _ id: ItemID) throws -> StoredItem? {
        var found: StoredItem?
        _ = try store.forEachItem(changedAfter: nil) { item in if item.id == id { found = item } }
        return found
    }

    /// Everything `to` lacks of `from`, in batches of three, as a session brings it.
    func sync(_ from: any ReplicaStorage, _ to: any ReplicaStorage, revoked: RevokedWriters = RevokedWriters()) throws {
        try syncAsASession(from, to, batchSize: 3, deltas: true, wallMilliseconds: t0, revoked: revoked)
    }

    /// The cut `revoker` would sign for `node`: what it holds of each of the node's writers.
    func cut(of node: NodeID, at revoker: any ReplicaStorage) throws -> RevokedWriters {
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
    /// deletes the other, adds a list element and creates an item, the last two under a new
    /// writer id (a peer witnessed more of its writer than it holds, as after a restore).
    func revokedScenario(
        in site: StorageSite
    ) throws -> (a: any ReplicaStorage, c: any ReplicaStorage, revoked: RevokedWriters) {
        let a = try site.replica(1)
        let c = try site.replica(3)
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
        let after = try c.apply(.update([.set(title, .string("after"))]), to: x, wallMilliseconds: t0 + 2)
        try c.apply(.delete, to: z, wallMilliseconds: t0 + 2)
        #expect(try c.noteWitness(VersionVector([after.node: after.counter + 10])), "the writer is retired")
        let dot = try c.apply(.update([.add(tags, .string("z"))]), to: x, wallMilliseconds: t0 + 3)
        #expect(dot.node != after.node && dot.node.isWriter(of: .node(3)), "a new writer id names its node")
        try c.apply(
            .create(type: "task", assignments: [.set(title, .string("planted"))]),
            to: y,
            wallMilliseconds: t0 + 4
        )
        return (a, c, revoked)
    }

    @Test(arguments: StorageKind.all)
    func writesAfterTheCutAreOverruledOnArrival(kind: StorageKind) throws {
        let site = try StorageSite(kind, "revoked-arrival")
        defer { site.close() }
        let (a, c, revoked) = try revokedScenario(in: site)
        try sync(c, a, revoked: revoked)
        #expect(try shown(a, x, title) == .string("before"), "the edit before the cut stays, the later one does not")
        #expect(try shown(a, x, tags) == .list([.string("a")]), "an element added after the cut is refused")
        #expect(try a.itemState(y)?.isDeleted == true, "an item created after the cut goes to the bin")
        #expect(try a.itemState(z)?.isDeleted == false, "an item deleted after the cut stays")
        #expect(try stored(a, z)?.deleted == false && stored(a, y)?.deleted == true, "derived columns")
        let rejected = try a.revokedWriteRejections(limit: 100)
        #expect(Set(rejected.map(\.field.rawValue)) == ["title", "tags", "_deleted"])
        #expect(rejected.allSatisfy { $0.reason.hasPrefix("written by revoked node ") })
        if let sqlite = a as? ReplicaStore {
            // History is read through the SQLite store only (the relay on PostgreSQL has no `history`).
            #expect(
                try sqlite.history(x, field: title).contains { $0.write == .assign(.string("after")) },
                "history still shows the refused value"
            )
        }
        // Applying the same writes again changes nothing: they are overruled for good.
        let version = try a.versionVector()
        try sync(c, a, revoked: revoked)
        #expect(try a.versionVector() == version)
    }

    /// A member that took the writes in before it held the revocation overrules them when it
    /// arrives; a member that refused them on arrival ends up with the same values, and the two
    /// converge when they sync.
    @Test(arguments: StorageKind.all)
    func writesTakenInBeforeTheRevocationAreOverruledWhenItArrives(kind: StorageKind) throws {
        let site = try StorageSite(kind, "revoked-later")
        defer { site.close() }
        let (a, c, revoked) = try revokedScenario(in: site)
        let b = try site.replica(2)
        try sync(a, b)
        try sync(c, b)
        #expect(try shown(b, x, title) == .string("after"), "without the revocation, b takes the edit")
        #expect(try b.overruleRevokedWrites(revoked, wallMilliseconds: t0 + 10) == 5, "four fields, one item")
        #expect(try b.itemState(z)?.isDeleted == false && stored(b, z)?.deleted == false)
        #expect(try shown(b, x, title) == .string("before"))
        #expect(try shown(b, x, tags) == .list([.string("a")]))
        #expect(try b.itemState(y)?.isDeleted == true && stored(b, y)?.deleted == true)
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
    /// (SQLite only: such writer ids exist only in files made before writer ids named their node;
    /// a PostgreSQL replica never had one.)
    @Test func anUnnamedWriterIsReplaced() throws {
        let lease = WriterLease(directory: dir)
        do {
            let store = try ReplicaStore.create(
                path: "\(dir)/r4.sqlite",
                nodeID: .node(4),
                clusterID: .node(99),
                nodeName: "n4",
                fingerprint: "fp",
                lease: lease
            )
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
