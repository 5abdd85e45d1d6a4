import Foundation
import LansyncTestLane
import Synchronization
import Testing

/// The compute lane (LansyncTestLane): a test that takes `.computeBound` runs on the lane's
/// threads, before and after it awaits, and leaves Swift's cooperative pool free meanwhile.
@Suite struct ComputeLaneTests {
    @Test(.computeBound) func aComputeBoundTestRunsOnTheLane() async {
        #expect(ComputeLane.isCurrent, "\(ComputeLane.currentThread)")
        try? await Task.sleep(for: .milliseconds(10))
        #expect(ComputeLane.isCurrent, "\(ComputeLane.currentThread)")
    }

    @Test func aTestWithoutTheTraitDoesNot() {
        #expect(!ComputeLane.isCurrent)
    }

    /// As many blocked jobs as the lane has threads, and the pool still answers: what the lane
    /// is for (a test blocked on the lane does not hold a thread of the pool).
    @Test func thePoolAnswersWhileTheLaneIsBlocked() async {
        let threads = max(2, ProcessInfo.processInfo.activeProcessorCount)
        let release = DispatchSemaphore(value: 0)
        let blocked = Count()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<threads {
                group.addTask(executorPreference: ComputeLane.shared) {
                    blocked.value.add(1, ordering: .relaxed)
                    release.wait()
                }
            }
            while blocked.value.load(ordering: .relaxed) < threads { await Task.yield() }
            // Every thread of the lane is held: work on the pool still runs.
            let answered = await Task.detached { 42 }.value
            #expect(answered == 42)
            for _ in 0..<threads { release.signal() }
        }
    }
}

/// A suite that takes the trait: each test, and each case of a parameterised one, synchronous
/// bodies included (the ones that held the pool), runs on the lane.
@Suite(.computeBound) struct ComputeBoundSuiteTests {
    @Test func aSynchronousTestRunsOnTheLane() {
        #expect(ComputeLane.isCurrent, "\(ComputeLane.currentThread)")
    }

    @Test(arguments: 0..<4) func eachCaseRunsOnTheLane(_ index: Int) {
        #expect(ComputeLane.isCurrent, "case \(index): \(ComputeLane.currentThread)")
    }
}

private final class Count: Sendable {
    let value = Atomic<Int>(0)
}
