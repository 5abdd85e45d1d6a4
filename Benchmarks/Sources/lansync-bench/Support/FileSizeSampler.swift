import BenchSQLite
import Foundation
import Glibc

/// Samples the sizes of some files every few milliseconds on a thread of its own, and keeps the
/// largest size seen of each: how the runner catches a WAL that grows and shrinks during a sync.
final class FileSizeSampler: @unchecked Sendable {
    // @unchecked: `largest` and `running` are only touched under `lock`; `paths` is immutable.
    private let paths: [String]
    private let lock = NSLock()
    private var largest: [Int]
    private var running = true
    private var thread: Thread?

    init(_ paths: [String], interval: Double = 0.01) {
        self.paths = paths
        largest = Array(repeating: 0, count: paths.count)
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                for (i, path) in paths.enumerated() {
                    var info = stat()
                    if stat(path, &info) == 0 { lock.withLock { largest[i] = max(largest[i], Int(info.st_size)) } }
                }
                usleep(useconds_t(interval * 1e6))
            }
        }
        self.thread = thread
        thread.start()
    }

    /// Stops sampling; returns the largest size seen of each path, in bytes.
    func stop() -> [Int] {
        lock.withLock { running = false }
        usleep(20_000)
        return lock.withLock { largest }
    }
}
