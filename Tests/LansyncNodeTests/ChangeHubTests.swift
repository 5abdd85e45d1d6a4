import LansyncCore
import LansyncTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import LansyncNode

/// How a change reaches the sessions: announced unread (a local edit), each woken session reads
/// the replica once, whatever vector the hub knew; the nudge datagram that announces a CLI's edit.
@Suite struct ChangeHubTests {
    /// Whatever tells the sessions of a change (announced, read, reset) moves the generation
    /// before it does, so a delta read shared within a generation never predates a change the
    /// session acting on it has heard of (``DeltaStarts``); a reset also says the peers' vectors
    /// were forgotten.
    @Test func everyAnnouncementMovesTheGenerationFirst() async throws {
        let hub = ChangeHub()
        let (_, changes) = hub.subscribe()
        var wakes = changes.makeAsyncIterator()
        var seen = hub.generation
        hub.notify(version: VersionVector([.node(1): 1]))
        #expect(await wakes.next() != nil)
        #expect(hub.generation > seen)
        seen = hub.generation
        hub.notifyUnread()
        #expect(await wakes.next() != nil)
        #expect(hub.generation > seen)
        seen = hub.generation
        hub.learn(version: VersionVector([.node(1): 2]))
        #expect(hub.generation > seen, "a reading may hold a change not yet announced")
        seen = hub.generation
        let resets = hub.resets
        hub.reset(version: nil)
        #expect(hub.generation > seen && hub.resets == resets + 1)
    }

    @Test func aChangeAnnouncedUnreadMakesEachSessionReadOnce() async throws {
        let hub = ChangeHub()
        let before = VersionVector([.node(1): 3])
        hub.notify(version: before)
        let (a, changesA) = hub.subscribe()
        let (b, _) = hub.subscribe()
        #expect(hub.version(for: a) == before, "a change announced with its vector")

        hub.notifyUnread()
        var wakes = changesA.makeAsyncIterator()
        #expect(await wakes.next() != nil, "the session is woken")
        // The vector known before the change would let a session whose peer holds it skip the
        // change: each woken session gets none, once, and reads the replica.
        #expect(hub.version(for: a) == nil)
        #expect(hub.version(for: a) == before, "once")
        let after = VersionVector([.node(1): 4])
        hub.learn(version: after)
        #expect(hub.version(for: b) == nil, "b has not asked since it was woken")
        #expect(hub.version(for: b) == after)
        #expect(hub.knownVersion == after)
        hub.unsubscribe(a)
        hub.notifyUnread()
        #expect(hub.version(for: a) == after, "a session gone is not waited for")
        #expect(hub.version(for: b) == nil)
    }

    /// Sessions woken by a change near its origin send it at once even over a pruned session
    /// (protocol 1.11), only in a cluster large enough to flood: below a hundred members a
    /// node's own edits follow the tree, as before hop counts (W9 at 8 nodes caught this: sent at
    /// once everywhere, each edit reached every node twice).
    @Test func onlyALargeClusterSendsChangesNearTheirOriginOverEverySession() {
        let hub = ChangeHub()
        hub.setWriter(.node(1))
        let (a, _) = hub.subscribe()
        let (b, _) = hub.subscribe()
        hub.setClusterSize(8)
        hub.notifyUnread()
        #expect(!hub.eager(for: a) && !hub.eager(for: b), "a small cluster: the tree alone")
        hub.setClusterSize(1000)
        hub.notifyUnread()
        #expect(hub.eager(for: a) && hub.eager(for: b), "this node's own edit, in a large cluster")
        #expect(!hub.eager(for: a), "asked once per wake-up")
        // A batch applied through a: the change is 2 hops from its origin here, within the flood.
        hub.notify(version: nil, except: a, hops: 2)
        #expect(!hub.eager(for: a) && hub.eager(for: b))
        hub.notify(version: nil, except: a, hops: 4)
        #expect(!hub.eager(for: b), "4 hops from its origin: past the flood, down the tree")
        hub.notify(version: nil, except: a, hops: nil)
        #expect(!hub.eager(for: b), "no count: down the tree")
        #expect(hub.hops(of: VersionVector([.node(1): 5])) == 0, "own changes are stamped 0")
    }

    @Test func aNudgeDatagramWakesTheNodeAndNothingElseDoes() async throws {
        let dir = makeTemporaryDirectory("nudge")
        let control = dir + "/control.sock"
        let path = NudgeServer.path(control: control)
        #expect(path == dir + "/nudge.sock")
        #expect(!ControlClient.sendNudgeDatagram(to: path), "no node: the CLI falls back to the control socket")

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let nudges = Count()
        let (seen, tell) = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup { tasks in
            tasks.addTask {
                try await NudgeServer.serve(path: path, group: group) {
                    nudges.value.withLock { $0 += 1 }
                    tell.yield()
                }
            }
            var waits = seen.makeAsyncIterator()
            var sent = false
            for _ in 0..<200 where !sent {
                sent = ControlClient.sendNudgeDatagram(to: path)
                if !sent { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(sent, "the node's nudge socket takes the datagram")
            _ = await waits.next()
            // Datagrams are read in order: once the nudge after it is seen, the other was dropped.
            #expect(ControlClient.sendNudgeDatagram(to: path, saying: Array("status".utf8)))
            #expect(ControlClient.sendNudgeDatagram(to: path))
            _ = await waits.next()
            #expect(nudges.value.withLock { $0 } == 2)
            tasks.cancelAll()
        }
        try await group.shutdownGracefully()
    }
}

/// A count shared with the nudge socket's event loop.
private final class Count: Sendable {
    let value = Mutex(0)
}
