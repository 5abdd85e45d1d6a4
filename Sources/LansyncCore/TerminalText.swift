/// Text that came from elsewhere (a peer's name, a value, an error a peer reported) made safe to
/// show on a terminal or write to a log.
///
/// A terminal obeys the control characters in what it prints: an escape sequence can erase the
/// line above, move the cursor, recolour the screen or set the window title, a carriage return
/// can overwrite what was printed, and bidirectional overrides reorder what a reader sees. Any
/// member can choose its name and its values, so every human surface passes peer-supplied text
/// through here (DESIGN invariant 11: checked before it is printed).
public enum TerminalText {
    /// Whether `scalar` is a control: the C0 controls (NUL included), DEL, the C1 controls, and the
    /// bidirectional embeddings, overrides and isolates. A machine's name may hold none (checked
    /// at `init`, `join` and on the wire), and JSON writes them as escapes.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// Whether `scalar` is written as an escape on a terminal: the controls (``isControl(_:)``),
    /// and also the line and paragraph separators (a line break to many viewers) and the
    /// direction marks. The marks are common in right-to-left names, so a name may hold them:
    /// they are escaped where shown, not refused.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E...0x200F, 0x2028...0x2029: true
        default: isControl(scalar)
        }
    }

    /// True if `text` holds a control (``isControl(_:)``).
    public static func hasControls(_ text: String) -> Bool { text.unicodeScalars.contains(where: isControl) }

    /// `text` with every scalar that ``needsEscape(_:)`` written as `\u001b` (the JSON spelling,
    /// so that inside a JSON string the escape reads back as the same character). Line breaks and
    /// tabs are kept when `keepingLineBreaks` (for output of several lines); otherwise they are
    /// escaped too (for one line of a log, a table cell, an error).
    public static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        // The common case: nothing to escape (one pass over the bytes, no allocation).
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if needsEscape(scalar), !(keepingLineBreaks && (scalar == "\n" || scalar == "\t")) {
                let hex = String(scalar.value, radix: 16)
                out.append(
                    contentsOf: "\\u\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex)".unicodeScalars
                )
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// True if `text` holds nothing ``needsEscape(_:)`` would escape.
    public static func isPlain(_ text: String) -> Bool { !text.unicodeScalars.contains(where: needsEscape) }
}

/// The rules of a machine's name (`init --name`, `join --name`, `invite --name`, a join
/// request): shown on every member's terminal, so no control characters.
public enum MachineName {
    /// The longest name, in UTF-8 bytes (what a hello carries).
    public static let maxBytes = 64

    /// What is wrong with `name`, or nil if it is a valid name.
    public static func problem(with name: String) -> String? {
        if name.isEmpty || name.utf8.count > maxBytes { return "a name must be 1 to \(maxBytes) bytes" }
        if TerminalText.hasControls(name) {
            return "a name may not hold control characters (escape sequences, line breaks, tabs) or direction overrides"
        }
        return nil
    }
}
