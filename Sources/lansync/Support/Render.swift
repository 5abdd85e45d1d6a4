import LansyncHost

/// Turns replica data into aligned text that fits the terminal (the JSON forms are the host's).
enum Render {
    /// A value for people (``Value/displayText``), cut to `width` columns on a terminal; whole
    /// to a pipe or a file (``Terminal/width`` is nil there), where a script reads it.
    static func human(_ value: Value, width: Int = 60) -> String {
        Terminal.width == nil ? value.displayText : truncate(value.displayText, to: width)
    }

    static func truncate(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        return String(text.prefix(max(1, width - 1))) + "…"
    }

    /// Text that is meant to be one line (a name, a reason, a peer's error, a table cell) with
    /// every control character escaped, line breaks and tabs included (``TerminalText``): a
    /// line break a peer put in its name must not print as a row of its own (issue 62).
    static func line(_ text: String) -> String { TerminalText.escaped(text) }

    /// Left-aligned columns separated by two spaces. Within `width` (the terminal's, by default)
    /// a column other than the last takes at most 40, and the last what is left; with no width
    /// (output to a pipe, or `--wide`), nothing is cut. Each cell is one line (``line(_:)``).
    static func table(_ header: [String], _ rows: [[String]], width: Int? = Terminal.width) -> String {
        tableLines(header, rows, width: width).joined(separator: "\n")
    }

    /// ``table(_:_:width:)`` as its lines.
    static func tableLines(_ header: [String], _ rows: [[String]], width: Int? = Terminal.width) -> [String] {
        guard !header.isEmpty else { return [] }
        let rows = rows.map { $0.map(Self.line) }
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count - 1 {
                widths[i] = max(widths[i], width == nil ? cell.count : min(cell.count, 40))
            }
        }
        let fixed = widths.dropLast().reduce(0) { $0 + $1 + 2 }
        let last = width.map { max(10, $0 - fixed) } ?? .max
        func row(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                if i == cells.count - 1 { return last == .max ? cell : truncate(cell, to: last) }
                let c = truncate(cell, to: widths[i])
                return c + String(repeating: " ", count: widths[i] - c.count)
            }.joined(separator: "  ")
        }
        return [row(header)] + rows.map(row)
    }

    /// `SYNCED (on kitchen, relay)`: the state, and the peers known to hold the edit.
    static func sync(_ sync: ItemSync) -> String {
        let names = sync.holders.map { $0.name.map(line) ?? $0.nodeID.short }
        return sync.state.rawValue
            + (names.isEmpty ? " (no other machine is known to have it)" : " (on \(names.joined(separator: ", ")))")
    }

    /// 41210 as "41,210", whatever the locale (output is read by scripts too).
    /// Bytes as megabytes with one decimal: "1.4 MB".
    static func megabytes(_ bytes: UInt64) -> String { "\(bytes / 1_000_000).\(bytes % 1_000_000 / 100_000) MB" }

    static func grouped(_ n: Int) -> String { NodeStatus.Peer.Receiving.grouped(n) }

    static func time(_ timestamp: HLCTimestamp) -> String {
        WallClock.iso8601(milliseconds: timestamp.milliseconds)
    }

    static func writer(_ dot: Dot, name: String?) -> String {
        if let name, !name.isEmpty { return "\(line(name)) (\(dot.node.short))" }
        return dot.node.short
    }

    /// What a write did, in a few words.
    static func change(_ write: FieldVersion.Write) -> String {
        switch write {
        case .assign(let value): return "= " + human(value, width: 200)
        case .unset: return "(removed)"
        case let .overrule(kept, _, reason):
            // The relay overrules a change over its limits; any member overrules a revoked
            // node's writes: the reason says which.
            return "refused, kept " + human(kept, width: 60) + " (" + line(reason) + ")"
        case .list(let change):
            // A whole list written is its value, as an assignment shows; an edit of elements
            // shows what it added and removed, as `set` takes them (`tags+=x`, `tags-=y`).
            if change.replaced { return "= " + human(.list(change.added), width: 200) }
            let parts =
                change.added.map { "+= " + human($0, width: 200) }
                + change.removed.map { "-= " + human($0, width: 200) }
            return parts.isEmpty ? "(an empty list edit)" : parts.joined(separator: ", ")
        }
    }
}
