import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file-system rules for a file a user names on the command line and lansync writes
/// (`backup FILE`): it is only ever a regular file, never a directory, never the replica or
/// anything else in the replica's data directory; it is written beside, flushed and renamed into
/// place, so it is either the whole new file or the old one untouched.
///
/// Everything here works on single directory entries (`unlink`, `rename`, `lstat`): nothing
/// removes recursively, so no path a user types can cost a directory (issue 62: `removeItem` on
/// `backup --force DIR` removed DIR and its files).
public enum SafeFile {
    /// Why `destination` cannot be written as a new file replacing (`replacing`) what is there,
    /// or nil if it can. `protectedDirectory` is the data directory: nothing in it (or below it)
    /// may be written, nor anything that is one of `protectedFiles` under another name (a hard
    /// or symbolic link to the replica).
    public static func writeProblem(
        _ destination: String,
        replacing: Bool,
        protectedDirectory: String,
        protectedFiles: [String]
    ) -> String? {
        if destination.isEmpty { return "no file given: name the file to write" }
        if destination.hasSuffix("/") {
            return
                "\(destination) names a directory: give a file name inside it, such as \(destination)lansync-backup.sqlite"
        }
        var info = stat()
        let exists = lstat(destination, &info) == 0
        if exists {
            let kind = info.st_mode & S_IFMT
            var target = stat()
            if kind == S_IFDIR
                || (kind == S_IFLNK && stat(destination, &target) == 0 && target.st_mode & S_IFMT == S_IFDIR)
            {
                return
                    "\(destination) is a directory: give a file name inside it, such as \(destination)/lansync-backup.sqlite"
            }
            if kind != S_IFREG {
                return "\(destination) is not a regular file (\(kindName(kind))): give the name of a new file"
            }
            if protectedFiles.contains(where: { sameFile(destination, $0) }) {
                return
                    "\(destination) is this node's replica: write the backup to a file outside the data directory \(protectedDirectory)"
            }
            if !replacing {
                return "\(destination) already exists: choose another file, or pass --force to replace it"
            }
        }
        let folder = parent(of: destination)
        guard let realFolder = realPath(folder) else {
            return "cannot write \(destination): the folder \(folder) does not exist or cannot be read; create it first"
        }
        if let realData = realPath(protectedDirectory), realFolder == realData || realFolder.hasPrefix(realData + "/") {
            return
                "\(destination) is inside the data directory \(protectedDirectory), where the node keeps its files: write the backup outside it"
        }
        return nil
    }

    /// Why `source` cannot be read as a file a user gave (a backup to restore), or nil.
    public static func readProblem(_ source: String, protectedFiles: [String]) -> String? {
        var info = stat()
        guard stat(source, &info) == 0 else { return nil }  // absence is the caller's to explain
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR { return "\(source) is a directory: give the file 'lansync backup' wrote" }
        if kind != S_IFREG {
            return "\(source) is not a regular file (\(kindName(kind))): give the file 'lansync backup' wrote"
        }
        if protectedFiles.contains(where: { sameFile(source, $0) }) {
            return "\(source) is this node's live replica, not a backup: give the file 'lansync backup' wrote"
        }
        return nil
    }

    /// A new, empty file beside `destination` that only this call created (O_EXCL), for the
    /// content to be written into before ``commit(_:to:)``.
    public static func makeSibling(of destination: String) throws -> String {
        for _ in 0..<16 {
            let candidate = destination + ".partial-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                close(fd)
                return candidate
            }
            if errno != EEXIST { throw posixError("cannot create \(candidate)") }
        }
        throw posixError("cannot create a file beside \(destination)")
    }

    /// Flushes `written` to disk and renames it over `destination` (one atomic step: a reader
    /// sees the old file or the new, never a part), then flushes the folder so the rename
    /// survives a power cut.
    public static func commit(_ written: String, to destination: String) throws {
        let fd = open(written, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open \(written)") }
        let synced = fsync(fd)
        close(fd)
        guard synced == 0 else { throw posixError("cannot flush \(written)") }
        guard rename(written, destination) == 0 else { throw posixError("cannot rename \(written) to \(destination)") }
        let folder = open(parent(of: destination), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    /// Removes `path` if it is a file (never a directory: `unlink` refuses those).
    public static func removeFile(_ path: String) {
        _ = unlink(path)
    }

    static func sameFile(_ a: String, _ b: String) -> Bool {
        var x = stat()
        var y = stat()
        guard stat(a, &x) == 0, stat(b, &y) == 0 else { return false }
        return x.st_dev == y.st_dev && x.st_ino == y.st_ino
    }

    package static func parent(of path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func kindName(_ kind: mode_t) -> String {
        switch kind {
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a pipe"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a plain file"
        }
    }

    private static func posixError(_ what: String) -> any Error {
        let reason = String(cString: strerror(errno))
        return NSError(domain: "lansync", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "\(what): \(reason)"])
    }
}
