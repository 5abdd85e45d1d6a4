import Foundation

/// Runs blocking work (a child process waited for to the end) on a thread of its own and awaits
/// it, so it never holds a thread of Swift's cooperative pool. That pool has one thread per core:
/// two on CI's machine. The browser test's 80-second script, waited for on one of them while a lab
/// script held the other, stalled every other test's awaits at once (CI saw four `status` calls in
/// four tests "take" 53 s together, and a gossip test give up on a session its node had opened).
func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
