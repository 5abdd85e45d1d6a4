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
}
