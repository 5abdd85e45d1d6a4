import LansyncNode
import Testing

/// Issue 62, defect 2: `status`'s progress of a peer's delta, from what the peer announced.
/// An `expect` of 2^64-1 is refused where it is decoded now, but the figures must not trap
/// whatever reaches them: the largest count, a rate under one field state a second, a clock
/// stepped back.
@Suite struct StatusFiguresTests {
    typealias Receiving = NodeStatus.Peer.Receiving

    @Test func timeLeftNeverTraps() {
        let now: UInt64 = 1_800_000_000_000
        // One field state in an hour of an announced Int.max: about 3e22 s, held at Int.max.
        #expect(Receiving.secondsLeft(received: 1, expected: .max, since: now - 3_600_000, now: now) == .max)
        #expect(Receiving.secondsLeft(received: .max, expected: .max, since: now - 1, now: now) == nil)
        #expect(Receiving.secondsLeft(received: .max, expected: 1, since: 0, now: now) == 0)
        // A clock stepped back while the delta runs: no rate (it wrapped to 1.8e16 s before).
        #expect(Receiving.secondsLeft(received: 1_000, expected: 2_000_000, since: now + 5_000, now: now) == nil)
        #expect(Receiving.secondsLeft(received: 0, expected: 10, since: now - 10_000, now: now) == nil)
        // And the ordinary case: 1,000 of 3,000 in 10 s, 20 s left.
        #expect(Receiving.secondsLeft(received: 1_000, expected: 3_000, since: now - 10_000, now: now) == 20)
    }

    @Test func progressLinesHoldAnyCounts() {
        #expect(Receiving(received: .max, expected: 1, etaSeconds: 0).summary.contains("(100%"))
        #expect(Receiving(received: 1, expected: .max, etaSeconds: .max).summary.contains("(0%"))
        #expect(Receiving(received: 5, expected: 0, etaSeconds: nil).summary.contains("(0%)"))
    }
}
