import LansyncCore
import LansyncNode
import LansyncTestSupport
import Testing

/// The node's record of how far changes travelled (protocol 1.11, Docs/SCALE.md "Spread").
@Suite struct HopRecordTests {
    static let me = NodeID.node(1)
    static let other = NodeID.node(2)
    static let third = NodeID.node(3)
    /// A replica's vector that holds every change the tests name.
    static let all = VersionVector([.node(1): 1000, .node(2): 1000, .node(3): 1000])

    /// No flood in a cluster the tree alone spans in a few hops; then the ball grows with it.
    @Test func theFloodGrowsWithTheCluster() {
        #expect(HopRecord.flood(forClusterOf: 0) == 0)
        #expect(HopRecord.flood(forClusterOf: 8) == 0)
        #expect(HopRecord.flood(forClusterOf: 200) == 0)
        #expect(HopRecord.flood(forClusterOf: 399) == 0)
        #expect(HopRecord.flood(forClusterOf: 400) == 3)
        #expect(HopRecord.flood(forClusterOf: 699) == 3)
        #expect(HopRecord.flood(forClusterOf: 700) == 4)
        #expect(HopRecord.flood(forClusterOf: 1000) == 4)
        #expect(HopRecord.flood(forClusterOf: 100_000) == 5)
        let small = HopRecord(writer: Self.me)
        #expect(!small.floods(0), "until the cluster is known to be large, even own edits follow the tree")
    }

    @Test func ownChangesAreNoHopsAwayAndOthersAsTheirBatchSaid() {
        var record = HopRecord(writer: Self.me, flood: 2)
        #expect(record.hops(of: VersionVector([Self.me: 9])) == 0)
        #expect(record.hops(of: VersionVector([Self.other: 1])) == nil, "nothing known yet")
        let new = record.applied(covers: VersionVector([Self.other: 4]), hops: 2, changed: 1, held: Self.all)
        #expect(!new, "a batch that changed something keeps its session anyway")
        #expect(record.hops(of: VersionVector([Self.other: 4])) == 3, "the sender's hops, and this one")
        #expect(record.hops(of: VersionVector([Self.other: 5])) == nil, "a newer change than the one recorded")
        #expect(record.hops(of: VersionVector([Self.other: 4, Self.me: 2])) == 0, "the fewest")
        // A batch that did not say forgets what was known of its writers.
        _ = record.applied(covers: VersionVector([Self.other: 6]), hops: nil, changed: 1, held: Self.all)
        #expect(record.hops(of: VersionVector([Self.other: 4])) == nil, "the count for 4 is gone too")
        // A count at its end stays there.
        _ = record.applied(covers: VersionVector([Self.third: 1]), hops: HopRecord.farthest, changed: 1, held: Self.all)
        #expect(record.hops(of: VersionVector([Self.third: 1])) == HopRecord.farthest)
        // A catch-up spreads from here as if made here.
        _ = record.applied(covers: VersionVector([Self.third: 2]), hops: HopRecord.caughtUp, changed: 1, held: Self.all)
        #expect(record.hops(of: VersionVector([Self.third: 2])) == 0)
    }

    /// Within the flood a change goes over every session, and its second copies are expected;
    /// past it, a second copy prunes its session as before.
    @Test func onlyCopiesNearTheOriginKeepTheirSessionEager() {
        let record = HopRecord(writer: Self.me, flood: 2)
        #expect(record.floods(0) && record.floods(1))
        #expect(!record.floods(2) && !record.floods(nil))
        var copy = record
        let covers = VersionVector([Self.other: 1])
        let near = copy.applied(covers: covers, hops: 1, changed: 0, held: Self.all)
        let far = copy.applied(covers: covers, hops: 2, changed: 0, held: Self.all)
        let unknown = copy.applied(covers: covers, hops: nil, changed: 0, held: Self.all)
        #expect(near, "arrived at 2: within the flood")
        #expect(!far, "arrived at 3")
        #expect(!unknown)
    }

    /// What a peer's covers name is recorded only when the replica holds it (the store leaves out
    /// writers it cannot verify), and the record stays within ``HopRecord/maxEntries`` whatever
    /// the peers send: a member making up writers cannot grow it.
    @Test func onlyWritersTheReplicaHoldsAreRecordedAndTheRecordIsBounded() {
        var record = HopRecord(writer: Self.me, flood: 3)
        let madeUp = NodeID.node(77)
        _ = record.applied(
            covers: VersionVector([Self.other: 2, madeUp: 9]),
            hops: 1,
            changed: 1,
            held: VersionVector([Self.other: 2])
        )
        #expect(record.hops(of: VersionVector([Self.other: 2])) == 2)
        #expect(record.hops(of: VersionVector([madeUp: 9])) == nil, "a writer the replica does not hold")
        _ = record.applied(covers: VersionVector([Self.third: 5]), hops: 1, changed: 1, held: nil)
        #expect(record.hops(of: VersionVector([Self.third: 5])) == nil, "no vector read: nothing recorded")

        let writers = (0...HopRecord.maxEntries).map { NodeID(high: 9, low: UInt64($0)) }
        let vector = VersionVector(Dictionary(uniqueKeysWithValues: writers.map { ($0, UInt64(1)) }))
        for writer in writers {
            _ = record.applied(covers: VersionVector([writer: 1]), hops: 0, changed: 1, held: vector)
        }
        #expect(record.hops(of: VersionVector([writers.last!: 1])) == 1, "the newest is known")
        #expect(record.hops(of: VersionVector([writers[0]: 1])) == nil, "past the bound, the record started again")
    }
}
