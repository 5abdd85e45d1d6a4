import Foundation

/// Reads the one-line files the system keeps about itself (the kernel's boot id, the machine id).
///
/// Plain `read(2)` and ASCII trimming: every command reads these as it starts, and Foundation's
/// `String(contentsOfFile:)` with `trimmingCharacters(in:)` cost each start about 0.4 ms of
/// first-use set-up (character sets, encodings) for 37 bytes.
public enum SystemFile {
    /// The file's first line without surrounding spaces; nil if it cannot be read or is empty.
    public static func firstLine(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let line = buffer.prefix(count).prefix { $0 != UInt8(ascii: "\n") }
        let isSpace: (UInt8) -> Bool = {
            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
        }
        let trimmed = line.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return trimmed.isEmpty ? nil : String(decoding: trimmed, as: UTF8.self)
    }
}
