#if canImport(Glibc)
import Glibc
#endif

/// How a long-running node asks the C allocator to treat large blocks.
///
/// glibc serves a block over its mmap threshold with a mapping of its own and unmaps it when
/// freed, but it raises that threshold to the size of every such block freed (up to 32 MiB), so
/// after one large frame every later one comes from the heap, and heap memory freed below the
/// top is never handed back. One member sending 16 MiB hellos then left a node 8–19 MiB larger
/// each time the chaos suite tried it. A fixed threshold stops the ratchet: frames, batches and
/// decode buffers of 1 MiB or more are mapped and unmapped, so a node's resident size returns to
/// where it was once a peer's input is refused. Smaller blocks, the node's everyday ones, are
/// unaffected.
enum MemoryPolicy {
    /// Blocks at least this large are always mapped on their own.
    static let mappedBlockBytes: Int32 = 1 << 20

    /// Applies the policy to this process; a no-op where the allocator has no `mallopt`.
    static func apply() {
        #if canImport(Glibc)
        // `mallopt` and `M_MMAP_THRESHOLD` (-3) live in <malloc.h>, which the Glibc module does
        // not import; the symbol is looked up instead.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(-3, mappedBlockBytes)
        #endif
    }
}
