import Foundation

/// Standard output and error as the CLI uses them.
enum Terminal {
    /// Something the user should know that is no error: `lansync: note: ...` on stderr.
    @Sendable static func note(_ message: String) {
        FileHandle.standardError.write(Data("lansync: note: \(message)\n".utf8))
    }

    /// Writes `text` to stderr as it is (progress bars, summaries).
    static func stderr(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// Buffered standard output (one write per 64 KiB, not per line).
struct Output {
    private var buffer: [UInt8] = []

    mutating func line(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(0x0a)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}
