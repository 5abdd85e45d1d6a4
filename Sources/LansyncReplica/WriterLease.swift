import Foundation
public import LansyncCore

/// The writer markers of ``WriterContinuity``, kept outside the replica's files: one small file per
/// writer id holding the machine's boot id and the replica's change count (meta `changes`, raised
/// by every transaction that changes a field, local or received) when it last wrote.
///
/// They live in a directory that restoring or copying a data directory does not touch: by default
/// `/dev/shm/lansync-UID` (memory, gone at reboot), else `/tmp/lansync-UID`; `$LANSYNC_RUNTIME_DIR`
/// overrides both. A marker written during another boot proves nothing and reads as missing, so a
/// reboot, a VM snapshot booted again or a cloned disk all start a new writer; so does a data
/// directory restored from a backup (it counts fewer changes than its marker: it lost local edits
/// or received ones).
///
/// Recording is best effort and only ever raises a marker: a marker that lags its replica (a
/// process stopped between commit and record) is accepted, a missing one costs one new writer id.
public struct WriterLease: Sendable {
    /// Where the markers are; nil if no directory could be made (then no continuity is ever proven).
    public let directory: String?
    let bootID: String

    public init(directory: String?, bootID: String = WriterLease.currentBootID) {
        self.directory = directory
        self.bootID = bootID
    }

    /// The markers' usual home (see the type's description).
    public static func standard() -> WriterLease {
        let uid = getuid()
        var candidates: [String] = []
        if let dir = ProcessInfo.processInfo.environment["LANSYNC_RUNTIME_DIR"], !dir.isEmpty { candidates.append(dir) }
        candidates += ["/dev/shm/lansync-\(uid)", NSTemporaryDirectory() + "/lansync-\(uid)"]
        for dir in candidates {
            if mkdir(dir, 0o700) == 0 || errno == EEXIST, access(dir, W_OK) == 0 { return WriterLease(directory: dir) }
        }
        return WriterLease(directory: nil)
    }

    /// This boot of the machine (the kernel's random boot id).
    public static let currentBootID: String = SystemFile.firstLine("/proc/sys/kernel/random/boot_id") ?? "unknown-boot"

    /// The change count recorded for `writer` during this boot; nil if none.
    public func marker(for writer: NodeID) -> UInt64? {
        guard let path = path(writer), let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return parse(text)
    }

    /// Raises `writer`'s marker to `stamp` (never lowers it).
    public func record(_ writer: NodeID, stamp counter: UInt64) {
        guard let path = path(writer) else { return }
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = read(fd, &buffer, buffer.count)
        let existing = n > 0 ? parse(String(decoding: buffer.prefix(n), as: UTF8.self)) : nil
        if let existing, existing >= counter { return }
        let line = Array("\(bootID) \(counter)\n".utf8)
        // Overwrite first, then cut: a process killed between the two leaves the new line whole
        // (the stamp only grows, so the old line is never longer). Truncating first left an empty
        // marker to a kill there, and the next write took a new writer for no reason.
        _ = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        _ = ftruncate(fd, off_t(line.count))
    }

    private func path(_ writer: NodeID) -> String? {
        directory.map { $0 + "/" + writer.text }
    }

    private func parse(_ text: String) -> UInt64? {
        let parts = text.split(whereSeparator: \.isWhitespace)
        guard parts.count == 2, parts[0] == bootID[...] else { return nil }
        return UInt64(parts[1])
    }
}
