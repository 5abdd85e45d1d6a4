import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

/// Writers a peer's batch brings into a real replica, in a SQLite file and in PostgreSQL alike
/// (both receive through ``BatchReceipt``): covers naming writers nobody can vouch for are left
/// out, and states naming more new writers than the bounds allow are refused whole, with nothing
/// merged.
@Suite(.computeBound) struct ReceivedWritersTests {
    let t0: UInt64 = 1_700_000_000_000
    let sender = NodeID.node(2)

    func fake(_ n: Int, from start: UInt64 = 10_000) -> [NodeID: UInt64] {
        Dictionary(uniqueKeysWithValues: (0..<UInt64(n)).map { (NodeID.node(start + $0), UInt64(1)) })
    }

    /// A field state written by `writer` whose context also names `others` (writes it saw).
    func update(_ item: String, by writer: NodeID, seeing others: [NodeID: UInt64] = [:]) -> FieldUpdate {
        var state = FieldState()
        for (node, counter) in others {
            state.assign(.string("seen"), dot: Dot(node: node, counter: counter), timestamp: HLCTimestamp(rawValue: 1))
        }
        state.assign(.string("v"), dot: Dot(node: writer, counter: 1), timestamp: HLCTimestamp(rawValue: 2))
        return FieldUpdate(key: FieldKey(item: .named(item), field: .named("f")), state: state)
    }

    func writerRows(_ store: any ReplicaStorage) throws -> Int { try store.writerCount() }

    /// `batch` from the sender, within `writers` and `allowance`, not completing a stream.
    @discardableResult
    func receive(
        _ batch: DeltaBatch,
        into store: any ReplicaStorage,
        refuse: FieldRefusal? = nil,
        writers: WriterBounds = .standard,
        allowance: Int? = nil
    ) throws(StoreError) -> ReceivedBatch {
        try store.receive(
            batch,
            from: sender,
            incarnation: sender,
            wallMilliseconds: t0,
            refuse: refuse,
            revoked: RevokedWriters(),
            writers: writers,
            allowance: allowance,
            rejoinedAt: nil,
            completingStream: false
        )
    }

    @Test(arguments: StorageKind.all)
    func coversNamingUnknownWritersAreLeftOut(kind: StorageKind) throws {
        let site = try StorageSite(kind, "covers")
        defer { site.close() }
        let store = try site.replica(1)
        let rowsBefore = try writerRows(store)
        var covers = fake(10_000)
        covers[sender] = 1
        let batch = DeltaBatch(updates: [update("x", by: sender)], covers: VersionVector(covers))
        let received = try receive(batch, into: store)
        try store.completeStream(from: sender, rejoinedAt: nil)
        #expect(received.unverifiedCovers == 10_000)
        #expect(received.changed == 1 && received.newWriters == 1)
        // The sender's own entry, named by its state, is kept; none of the made-up ones is.
        #expect(try store.versionVector() == VersionVector([sender: 1]))
        #expect(try writerRows(store) == rowsBefore + 1)
    }

    /// A writer the replica knows already (from an earlier state) is vouched for in covers even
    /// when the batch carries nothing of it; among a thousand made-up ones too (looked up by one
    /// read of every writer's id, not one look-up each).
    @Test(arguments: StorageKind.all, [0, 1_000])
    func coversOfAKnownWriterAreKept(kind: StorageKind, madeUp: Int) throws {
        let site = try StorageSite(kind, "known")
        defer { site.close() }
        let store = try site.replica(1)
        let other = NodeID.node(3)
        try receive(DeltaBatch(updates: [update("x", by: other)], covers: VersionVector()), into: store)
        var covers = fake(madeUp)
        covers[other] = 5
        let received = try receive(DeltaBatch(updates: [], covers: VersionVector(covers)), into: store)
        try store.completeStream(from: sender, rejoinedAt: nil)
        #expect(received.unverifiedCovers == madeUp)
        #expect(try store.versionVector()[other] == 5)
    }

    @Test(arguments: StorageKind.all)
    func tooManyNewWritersInASessionAreRefusedWhole(kind: StorageKind) throws {
        let site = try StorageSite(kind, "session")
        defer { site.close() }
        let store = try site.replica(1)
        let rowsBefore = try writerRows(store)
        let batch = DeltaBatch(updates: [update("x", by: sender, seeing: fake(20))], covers: VersionVector())
        #expect(throws: StoreError.tooManyNewWriters(new: 21, perSession: 100)) {
            try receive(batch, into: store, writers: WriterBounds(total: 1000, perSession: 100), allowance: 10)
        }
        #expect(try store.itemState(.named("x")) == nil)
        #expect(try writerRows(store) == rowsBefore)
        // With the allowance of a new session it goes in.
        let received = try receive(batch, into: store, writers: WriterBounds(total: 1000, perSession: 100))
        #expect(received.newWriters == 21)
        #expect(try store.itemState(.named("x")) != nil)
    }

    /// A limit on an item's fields counts the fields the same batch added before (a new item
    /// starts at none) and, in a later batch, those stored: what passes it is merged, what
    /// does not is overruled (kept as it was: null for a new field), never stored.
    @Test(arguments: StorageKind.all)
    func aFieldCountLimitCountsWhatTheBatchAdded(kind: StorageKind) throws {
        let site = try StorageSite(kind, "fields")
        defer { site.close() }
        let store = try site.replica(1)
        let refuse: FieldRefusal = { key, _, held, userFields in
            guard !key.field.isReserved, held == nil else { return nil }
            return try userFields() >= 3 ? "more than 3 fields" : nil
        }
        func field(_ name: String, _ counter: UInt64) -> FieldUpdate {
            var state = FieldState()
            state.assign(
                .string(name),
                dot: Dot(node: sender, counter: counter),
                timestamp: HLCTimestamp(rawValue: counter)
            )
            return FieldUpdate(key: FieldKey(item: .named("wide"), field: .named(name)), state: state)
        }
        let first = DeltaBatch(updates: (1...5).map { field("f\($0)", UInt64($0)) }, covers: VersionVector())
        try receive(first, into: store, refuse: refuse)
        let item = try #require(try store.itemState(.named("wide")))
        #expect((1...3).allSatisfy { item.fields[.named("f\($0)")]?.shownValue == .string("f\($0)") })
        #expect((4...5).allSatisfy { item.fields[.named("f\($0)")]?.shownValue == .null })
        try receive(DeltaBatch(updates: [field("f6", 6)], covers: VersionVector()), into: store, refuse: refuse)
        #expect(try store.itemState(.named("wide"))?.fields[.named("f6")]?.shownValue == .null)
    }

    @Test(arguments: StorageKind.all)
    func aBatchPastTheTotalIsRefusedWhole(kind: StorageKind) throws {
        let site = try StorageSite(kind, "total")
        defer { site.close() }
        let store = try site.replica(1)
        let rowsBefore = try writerRows(store)
        let batch = DeltaBatch(updates: [update("x", by: sender, seeing: fake(20))], covers: VersionVector())
        #expect(throws: StoreError.tooManyWriters(held: rowsBefore, new: 21, limit: rowsBefore + 20)) {
            try receive(batch, into: store, writers: WriterBounds(total: rowsBefore + 20, perSession: 1000))
        }
        #expect(try store.itemState(.named("x")) == nil)
        #expect(try writerRows(store) == rowsBefore)
    }
}
