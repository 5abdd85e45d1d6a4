#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The size, modification time and inode of a replica file and of its write-ahead log: two
/// `stat` calls, and different after any commit (in WAL mode a commit appends to the log, and a
/// checkpoint that rewinds it changes its time).
package struct FileStamp: Equatable {
    package private(set) var parts: [Int] = []

    package init(path: String) {
        for file in [path, path + "-wal"] {
            var info = stat()
            if stat(file, &info) == 0 {
                parts += [Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_ino)]
            } else {
                parts.append(-1)
            }
        }
    }
}
