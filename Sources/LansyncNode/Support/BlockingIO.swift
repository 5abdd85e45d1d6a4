import NIOPosix

/// Runs blocking work (SQLite reads and writes, with their fsyncs) on a small dedicated thread
/// pool, so it never occupies the Swift concurrency threads that drive the network.
public final class BlockingIO: Sendable {
    private let pool: NIOThreadPool

    public init(threads: Int = 2) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(work)
    }

    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}
