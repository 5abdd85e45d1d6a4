import Foundation

/// Files that hold secrets (the cluster secret, a node's key): written readable by their owner
/// only (0600) and synced before anything relies on them.
public enum SecretFile {
    /// Writes `text` to `path`. Without `replace`, refuses to overwrite an existing file. With
    /// it, the old file stays whole until the new one is: the text goes to a file beside it,
    /// synced, then renamed over it (a reader, or a crash, sees the old file or the new one,
    /// never an empty one; a node's key truncated by a power cut would cut the machine off).
    public static func write(_ text: String, to path: String, replace: Bool = false) throws(HostError) {
        guard replace else { return try create(text, at: path, path) }
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        do throws(HostError) {
            try create(text, at: temporary, path)
            guard rename(temporary, path) == 0 else {
                throw HostError("cannot write \(path): \(Self.reason(errno, path: path))")
            }
        } catch {
            unlink(temporary)
            throw error
        }
        // The rename is durable once the directory is synced.
        let directory = (path as NSString).deletingLastPathComponent
        let dirFD = Foundation.open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
    }

    /// Creates `file` (which must not exist) holding `text`, synced; errors name `path`.
    private static func create(_ text: String, at file: String, _ path: String) throws(HostError) {
        let fd = Foundation.open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw HostError("\(path) already exists: choose another file name, or remove it first")
            }
            throw HostError("cannot write \(path): \(Self.reason(errno, path: path))")
        }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw HostError("cannot write \(path): \(Self.reason(errno, path: path))") }
            written += n
        }
        guard fsync(fd) == 0 else { throw HostError("cannot write \(path): \(Self.reason(errno, path: path))") }
    }

    /// Why a file could not be written, and what to do, in words.
    static func reason(_ code: Int32, path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        switch code {
        case ENOENT:
            return
                "the directory \(directory.isEmpty ? "." : directory) does not exist: create it, or choose another path"
        case EACCES, EPERM: return "permission denied: choose a directory you can write to"
        case ENOSPC: return "the disk is full: free some space and try again"
        case EROFS: return "the file system is read-only: choose another path"
        case EISDIR: return "it is a directory: give a file name"
        default: return String(cString: strerror(code)) + ": check the path"
        }
    }
}
