import LansyncCore
import Testing

@testable import LansyncNode

/// Which relay a node given several uses, and when it moves on (``RelayRoster``).
@Suite struct RelayRosterTests {
    let first = PeerAddress(host: "10.0.0.1", port: 7420)
    let second = PeerAddress(host: "10.0.0.2", port: 7420)
    let third = PeerAddress(host: "relay.example.org", port: 7420)

    @Test func noRelayGivenIsNoRoster() {
        #expect(RelayRoster([]) == nil)
    }

    @Test func aFailureMovesToTheNextAndEveryRelayIsTriedOnceBeforeTheLoopWaits() throws {
        var roster = try #require(RelayRoster([first, second, third]))
        #expect(roster.current == first)
        let one = roster.failed(because: "cannot connect: refused", at: 1)
        #expect(one.moved == RelayRoster.Failover(from: first, to: second, reason: "cannot connect: refused", at: 1))
        #expect(!one.roundFailed)
        #expect(roster.failed(because: "timeout", at: 2).roundFailed == false)
        #expect(roster.current == third)
        let three = roster.failed(because: "timeout", at: 3)
        #expect(three.roundFailed, "every relay failed in a row: the loop backs off")
        #expect(roster.current == first, "then starts the list again")
        #expect(roster.failovers == 3)
        #expect(roster.lastFailover?.from == third)
    }

    @Test func aRelayThatAnswersIsKeptAndStartsANewRound() throws {
        var roster = try #require(RelayRoster([first, second]))
        roster.failed(because: "refused", at: 1)
        #expect(roster.current == second)
        roster.answered()
        // The first one failed a while ago; the second answered since: its own failure is the
        // first of a new round, and the node moves back to the first at once.
        let again = roster.failed(because: "reset", at: 2)
        #expect(!again.roundFailed)
        #expect(roster.current == first)
        #expect(roster.failovers == 2)
    }

    @Test func withOneRelayEveryFailureIsARoundAndNothingMoves() throws {
        var roster = try #require(RelayRoster([first]))
        for i in 0..<3 {
            let outcome = roster.failed(because: "refused", at: UInt64(i))
            #expect(outcome.moved == nil)
            #expect(outcome.roundFailed)
        }
        #expect(roster.current == first)
        #expect(roster.failovers == 0)
        #expect(roster.lastFailover == nil)
    }

    @Test func statusSaysWhichRelayAndWhy() throws {
        var roster = try #require(RelayRoster([first, second]))
        roster.failed(because: "cannot connect: refused", at: 0)
        let shown = NodeStatus.Relays(roster, connected: true)
        #expect(shown.current == "10.0.0.2:7420")
        #expect(shown.addresses == ["10.0.0.1:7420", "10.0.0.2:7420"])
        #expect(shown.problem == nil, "connected: nothing to explain")
        #expect(
            shown.summary
                == "10.0.0.2:7420 (2 of 2), connected; failed over 1 time(s), last from 10.0.0.1:7420 at 1970-01-01T00:00:00.000Z: cannot connect: refused"
        )
    }

    /// Issue 63: a node with no session with its relay says so, why, and since when (the first
    /// failure of a run of them, kept until the relay answers again).
    @Test func statusSaysWhenAndWhyTheRelayIsNotConnected() throws {
        var roster = try #require(RelayRoster([first]))
        #expect(roster.problem == nil)
        roster.lost(because: "its session ended: the peer closed the connection", at: 1_000)
        roster.failed(because: "cannot connect: connection refused", at: 2_000)
        #expect(roster.problem?.since == 1_000, "since the session ended, not since the last try")
        let shown = NodeStatus.Relays(roster, connected: false)
        #expect(
            shown.summary
                == "10.0.0.1:7420 (1 of 1), NOT CONNECTED since 1970-01-01T00:00:01.000Z: 10.0.0.1:7420: cannot connect: connection refused"
        )
        roster.claimed(NodeID(high: 7, low: 7))
        #expect(roster.node == NodeID(high: 7, low: 7), "asked by id from now on")
        roster.answered()
        #expect(roster.problem == nil)
        let never = try #require(RelayRoster([first, second]))
        #expect(
            NodeStatus.Relays(never, connected: false).summary
                == "10.0.0.1:7420 (1 of 2), NOT CONNECTED: connecting (no answer yet)",
            "no made-up time before the first attempt"
        )
        var moving = never
        moving.claimed(NodeID(high: 7, low: 7))
        moving.failed(because: "reset", at: 5)
        #expect(moving.node == nil, "another relay: its id is not known yet")
        #expect(NodeStatus.Relays(roster, connected: true).summary == "10.0.0.1:7420 (1 of 1), connected")
    }
}
