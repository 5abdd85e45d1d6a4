import Testing

@testable import LansyncNode

/// How often a node saves what it knows of its peers: the gathering wait grows with the size of
/// the last save, so that a relay with a thousand members (a thousand vectors of a thousand
/// entries) does not spend its writer on the peer table.
@Suite struct PeerSavesTests {
    @Test func smallSavesGatherFiftyMilliseconds() {
        #expect(PeerRegistry.gathering(after: 0) == .milliseconds(50))
        // Eight peers of a cluster of eight: as before.
        #expect(PeerRegistry.gathering(after: 8 * 9) == .milliseconds(50))
    }

    @Test func largeSavesWaitInProportionUpToFiveSeconds() {
        // 200 members with 200-entry vectors, their reports too.
        #expect(PeerRegistry.gathering(after: 2 * 200 * 201) == .microseconds(160_800))
        // A thousand members: two million entries, four seconds; more is capped.
        #expect(PeerRegistry.gathering(after: 2 * 1000 * 1001) == .microseconds(4_004_000))
        #expect(PeerRegistry.gathering(after: 3 * 1000 * 1001) == .seconds(5))
        #expect(PeerRegistry.gathering(after: 50_000) > PeerRegistry.gathering(after: 40_000))
    }
}
