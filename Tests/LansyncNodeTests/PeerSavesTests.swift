import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Testing

@testable import LansyncNode

/// How often a node saves what it knows of its peers: the gathering wait grows with the time the
/// last save took, so that a relay with a thousand members (a thousand vectors of a thousand
/// entries) does not spend its writer on the peer table.
@Suite struct PeerSavesTests {
    @Test func quickSavesGatherFiftyMilliseconds() {
        #expect(PeerRegistry.gathering(afterSaveTook: .zero) == .milliseconds(50))
        // A cluster of eight: a save takes well under a millisecond, as before.
        #expect(PeerRegistry.gathering(afterSaveTook: .microseconds(400)) == .milliseconds(50))
    }

    @Test func slowSavesWaitTwentyTimesAsLongUpToFiveSeconds() {
        // 200 members (W10): about 20 ms a save.
        #expect(PeerRegistry.gathering(afterSaveTook: .milliseconds(22)) == .milliseconds(440))
        #expect(PeerRegistry.gathering(afterSaveTook: .milliseconds(200)) == .seconds(4))
        #expect(PeerRegistry.gathering(afterSaveTook: .seconds(1)) == .seconds(5))
    }

    /// A thousand peers are saved in transactions of fifty, each with its peers' reports, so a
    /// member's batch never waits behind the whole save.
    @Test func aLargeSaveGoesInParts() {
        let nodes = (1...1_000).map { NodeID.node(UInt64($0)) }
        let records = nodes.map { PeerRecord(nodeID: $0, source: .inbound) }
        // Reports only for the connected peers: every third.
        let reports = nodes.enumerated().filter { $0.offset % 3 == 0 }.map {
            MemberReport(nodeID: $0.element, seen: VersionVector([$0.element: 1]), at: 5)
        }
        let names = [(name: "m1", ids: Set([nodes[0]]))]
        let parts = PeerRegistry.parts(records, reports: reports, names: names)
        #expect(parts.count == 20)
        #expect(parts.allSatisfy { $0.records.count == PeerRegistry.savedAtOnce })
        #expect(parts.flatMap { $0.records.map(\.nodeID) } == nodes, "every peer once, in order")
        #expect(parts.flatMap { $0.reports.map(\.nodeID) } == reports.map(\.nodeID))
        for part in parts {
            let ids = Set(part.records.map(\.nodeID))
            #expect(part.reports.allSatisfy { ids.contains($0.nodeID) }, "a report goes with its peer")
        }
        #expect(parts[0].names.count == 1 && parts.dropFirst().allSatisfy { $0.names.isEmpty })
        // Names alone (no peer changed): one part that saves them.
        let alone = PeerRegistry.parts([], reports: [], names: names)
        #expect(alone.count == 1 && alone[0].names.count == 1 && alone[0].records.isEmpty)
    }
}
