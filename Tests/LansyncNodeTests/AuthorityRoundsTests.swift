import Foundation
import LansyncCore
import LansyncTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import LansyncNode

/// How the relay's settling rounds are shared between the sessions that ask for them: a session
/// that applied a batch runs one round and never the rounds other sessions' batches ask for
/// meanwhile (under load those came without end, and its peer got nothing for seconds, W10).
@Suite struct AuthorityRoundsTests {
    /// A gate whose `holds` waits until the test opens it, counting its calls: a round that the
    /// test can hold in the middle.
    final class HeldGate: Sendable {
        let calls = NIOLockedValueBox(0)
        let waiting = NIOLockedValueBox<[CheckedContinuation<Void, Never>]>([])

        var gate: SettlingGate {
            SettlingGate(
                keep: { _ in },
                holds: { [self] in
                    calls.withLockedValue { $0 += 1 }
                    await withCheckedContinuation { continuation in
                        waiting.withLockedValue { $0.append(continuation) }
                    }
                    // Nothing is settled: the round ends at once after it is let go.
                    return false
                },
                decide: { _, proposed in proposed },
                standing: { .following(holder: "another relay", epoch: 1) },
                forget: { _ in 0 }
            )
        }

        /// Waits until a round is inside `holds`, then lets it go.
        func release() async {
            while true {
                if let next = waiting.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() }) {
                    next.resume()
                    return
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }

        /// Waits until `count` rounds have asked the gate.
        func awaitCalls(_ count: Int) async {
            while calls.withLockedValue({ $0 }) < count { try? await Task.sleep(for: .milliseconds(1)) }
        }
    }

    @Test func aSessionsRoundLeavesLaterAsksToATaskOfTheirOwn() async throws {
        let dir = makeTemporaryDirectory("authority-rounds")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try SessionRunnerTests.store(dir, "relay", node: .node(1), cluster: .node(99))
        let held = HeldGate()
        let authority = Authority(store: store, io: BlockingIO(threads: 1), policy: .latest, gate: held.gate)

        let session = Task { await authority.settleOnce() }
        await held.awaitCalls(1)
        // Another session's batch while the round runs: it does not wait, and asks for one more.
        #expect(await authority.settleOnce() == (0, false))
        _ = await authority.settleAll()
        await held.release()
        let first = await session.value
        #expect(first.more, "the asks that came during the round were not passed on")
        #expect(held.calls.withLockedValue { $0 } == 1, "the session ran rounds others asked for")

        // Passed on, as the node does (``Node/settleSoon()``): one more round, in its own task.
        let more = Task { await authority.settleAll() }
        await held.awaitCalls(2)
        await held.release()
        #expect(await more.value == 0)
        #expect(held.calls.withLockedValue { $0 } == 2)
    }
}
