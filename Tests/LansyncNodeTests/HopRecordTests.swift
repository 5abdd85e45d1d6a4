import LansyncCore
import LansyncNode
import LansyncTestSupport
import Testing

/// The node's record of how far changes travelled (protocol 1.11, Docs/SCALE.md "Spread").
@Suite struct HopRecordTests {
    static let me = NodeID.node(1)
    static let other = NodeID.node(2)
    static let third = NodeID.node(3)

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
        let new = record.applied(covers: VersionVector([Self.other: 4]), hops: 2, changed: 1)
        #expect(!new, "a batch that changed something keeps its session anyway")
        #expect(record.hops(of: VersionVector([Self.other: 4])) == 3, "the sender's hops, and this one")
        #expect(record.hops(of: VersionVector([Self.other: 5])) == nil, "a newer change than the one recorded")
        #expect(record.hops(of: VersionVector([Self.other: 4, Self.me: 2])) == 0, "the fewest")
        // A batch that did not say forgets what was known of its writers.
        _ = record.applied(covers: VersionVector([Self.other: 6]), hops: nil, changed: 1)
        #expect(record.hops(of: VersionVector([Self.other: 6])) == nil)
        // A count at its end stays there.
        _ = record.applied(covers: VersionVector([Self.third: 1]), hops: HopRecord.farthest, changed: 1)
        #expect(record.hops(of: VersionVector([Self.third: 1])) == HopRecord.farthest)
        // A catch-up spreads from here as if made here.
        _ = record.applied(covers: VersionVector([Self.third: 2]), hops: HopRecord.caughtUp, changed: 1)
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
        let near = copy.applied(covers: covers, hops: 1, changed: 0)
        let far = copy.applied(covers: covers, hops: 2, changed: 0)
        let unknown = copy.applied(covers: covers, hops: nil, changed: 0)
        #expect(near, "arrived at 2: within the flood")
        #expect(!far, "arrived at 3")
        #expect(!unknown)
    }
}
