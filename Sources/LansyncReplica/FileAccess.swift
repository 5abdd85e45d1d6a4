import Foundation

/// Why this process cannot read a file of a data directory, in words that name the owner: a
/// directory of another user is not "no replica", and an unreadable file is not one that exists
/// and must be renamed.
public enum FileAccess {
    /// A sentence for a read of `path` that the system refused, or nil if `path` is readable or
    /// absent (absence is the caller's to explain). Looks at `path` and each folder above it.
    public static func readProblem(_ path: String) -> String? {
        var info = stat()
        if stat(path, &info) == 0 {
            guard access(path, R_OK) != 0 else { return nil }
            return denied(path, info)
        }
        guard errno == EACCES else { return nil }
        // A folder on the way is closed to us: name the nearest one that is.
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, folder != "/" {
            if stat(folder, &info) == 0, access(folder, X_OK) != 0 { return denied(folder, info) }
            folder = (folder as NSString).deletingLastPathComponent
        }
        return "cannot read \(path): permission denied: run lansync as the user who owns it"
    }

    /// True if this process may write `path` and create files beside it (SQLite's WAL needs both).
    public static func isWritable(_ path: String) -> Bool {
        let folder = (path as NSString).deletingLastPathComponent
        return access(path, W_OK) == 0 && access(folder.isEmpty ? "." : folder, W_OK) == 0
    }

    static func denied(_ path: String, _ info: stat) -> String {
        let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
        let mode = String(info.st_mode & 0o777, radix: 8)
        return
            "cannot read \(path): permission denied (it belongs to \(owner), mode \(mode)): run lansync as \(owner) (for example 'sudo -u \(owner) lansync ...'), or use a data directory of your own"
    }
}
