import Foundation

/// Files that hold secrets (the cluster secret, a node's key): written readable by their owner
/// only (0600) and synced before anything relies on them.
public enum SecretFile {
    /// Writes `text` to `path`. Without `replace`, refuses to overwrite an existing file.
    public static func write(_ text: String, to path: String, replace: Bool = false) throws(HostError) {
        let flags = O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL)
        let fd = Foundation.open(path, flags, 0o600)
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
