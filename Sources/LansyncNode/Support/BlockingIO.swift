import NIOPosix

/// Runs blocking work (SQLite reads and writes, with their fsyncs) on small dedicated thread
/// pools, so it never occupies the Swift concurrency threads that drive the network.
///
/// Reads and writes have pools of their own. SQLite takes one writer at a time, and a write can
/// wait up to the store's busy timeout (30 s) for another process's (a large `lansync import`);
/// on a shared pool, two such writes held both threads and every read of the local API queued
/// behind them, although WAL lets reads go on beside a writer. Writes wait on their own single
/// thread instead, in the order they came, and reads keep theirs.
public final class BlockingIO: Sendable {
    private let reads: NIOThreadPool
    private let writes: NIOThreadPool

    /// `threads` for reads, and one for writes.
    public init(threads: Int = 2) {
        reads = NIOThreadPool(numberOfThreads: threads)
        writes = NIOThreadPool(numberOfThreads: 1)
        reads.start()
        writes.start()
    }

    /// Work that only reads the replica: it never waits behind a write that waits for the file's
    /// lock.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await reads.runIfActive(work)
    }

    /// Work that writes the replica: one at a time, on the write thread.
    public func write<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await writes.runIfActive(work)
    }

    public func shutdown() async {
        try? await reads.shutdownGracefully()
        try? await writes.shutdownGracefully()
    }
}
