import Dispatch
import Foundation
import Synchronization
public import Testing

/// Threads of their own for tests that compute or block for long (property checks, model
/// lockstep runs, stream runs over a real PostgreSQL server, whose every call waits for a round
/// trip on the calling thread), so that they never hold Swift's cooperative pool.
///
/// Why: the pool has one thread a core, and Swift Testing runs every test of a process on it
/// at once. A synchronous test body holds its thread until it returns; on this project's two
/// cores two of them starved every other test's tasks for minutes (a fresh-clone CI run: a
/// PostgreSQL connection's preparation, a task, waited past its 5-minute bound, and a recorded
/// session went quiet for seconds while its node's tasks waited for a thread). On the lane the
/// long tests take turns among themselves, and the kernel shares the cores between the lane's
/// threads and the pool's, so a test that waits for a node, a process or a lease is woken in time.
///
/// Guarantees: every job enqueued runs exactly once, on one of the lane's threads; jobs start in
/// the order they were enqueued. The lane is a `TaskExecutor` (not a serial one): two jobs may
/// run at once, on different threads.
public final class ComputeLane: TaskExecutor {
    /// The one lane of a test process: as many threads as the pool has (at least two).
    public static let shared = ComputeLane(threads: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private let jobs = Mutex<[UnownedJob]>([])
    /// Counts the jobs waiting in ``jobs``: a thread takes one only after the count let it by.
    private let waiting = DispatchSemaphore(value: 0)

    init(threads: Int) {
        for index in 0..<threads {
            // Named from the thread itself: a name given before `start()` is not applied on Linux.
            Thread { [self] in
                Thread.current.name = "compute-lane-\(index)"
                _ = Self.laneThreads.withLock { $0.insert(pthread_self()) }
                work()
            }.start()
        }
    }

    /// Whether the calling code runs on a thread of a lane.
    public static var isCurrent: Bool { laneThreads.withLock { $0.contains(pthread_self()) } }

    /// The calling thread, as a failing check names it.
    public static var currentThread: String { "\(Thread.current.name ?? "unnamed") (\(pthread_self()))" }

    /// The lanes' threads, by their pthread identity: a name is not one (in a full run, code of a
    /// test on the lane renamed its thread, and a check by name failed).
    private static let laneThreads = Mutex<Set<pthread_t>>([])

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        waiting.signal()
    }

    /// A thread's life: the next job, run, for as long as the process lives.
    private func work() -> Never {
        while true {
            waiting.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// The trait that runs a suite's or a test's body on the ``ComputeLane``: for tests that compute
/// or block for long. A test that waits on time (a lease, a node's answer, a quiet period) does
/// not take it: on the lane it would wait behind the long tests.
public struct ComputeBoundTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(ComputeLane.shared) { try await function() }
    }
}

extension Trait where Self == ComputeBoundTrait {
    /// Runs the suite's or the test's body on the ``ComputeLane``, off Swift's cooperative pool.
    public static var computeBound: Self { ComputeBoundTrait() }
}
