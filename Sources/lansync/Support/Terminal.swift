import Foundation
import LansyncHost

/// Everything the CLI prints on standard output goes through here, not Swift's `print`: names,
/// values and errors that peers chose reach the terminal with their control characters escaped
/// (``TerminalText``), whichever command prints them. JSON output is unchanged by it (its
/// strings hold no raw control character).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let text = items.map { "\($0)" }.joined(separator: separator) + terminator
    FileHandle.standardOutput.write(Data(TerminalText.escaped(text, keepingLineBreaks: true).utf8))
}

/// Standard output and error as the CLI uses them.
enum Terminal {
    /// Something the user should know that is no error: `lansync: note: ...` on stderr.
    @Sendable static func note(_ message: String) {
        FileHandle.standardError.write(Data("lansync: note: \(TerminalText.escaped(message))\n".utf8))
    }

    /// Writes `text` to stderr (progress bars, summaries), control characters escaped but for
    /// line breaks and the carriage returns that redraw a progress line.
    static func stderr(_ text: String) {
        let lines = text.split(separator: "\r", omittingEmptySubsequences: false).map {
            TerminalText.escaped(String($0), keepingLineBreaks: true)
        }
        FileHandle.standardError.write(Data(lines.joined(separator: "\r").utf8))
    }

    /// Replaces the line the cursor is on with `text` (a progress line on a terminal); an empty
    /// `text` clears it.
    static func redrawLine(_ text: String) {
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + TerminalText.escaped(text)).utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// The columns human output may use: `COLUMNS` when set, else the width of the terminal on
    /// standard output; nil when output goes to a pipe or file (nothing is cut there).
    /// Read once: a command's output goes to one place, and a list asks for every cell.
    static let width: Int? = {
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 {
            return max(columns, 40)
        }
        guard isatty(1) == 1 else { return nil }
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return max(Int(size.ws_col), 40)
    }()
}

/// Buffered standard output (one write per 64 KiB, not per line).
struct Output {
    private var buffer: [UInt8] = []

    mutating func line(_ text: String) {
        buffer.append(contentsOf: TerminalText.escaped(text, keepingLineBreaks: true).utf8)
        buffer.append(0x0a)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}
