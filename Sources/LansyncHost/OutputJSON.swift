public import LansyncCore
public import LansyncJSON
public import LansyncStore

/// The JSON forms of what read commands print with `--json` (Docs/CLI.md is their contract), kept
/// here so that every front end prints the same thing.
extension StoredItem {
    /// `{"id": ID, "type": TYPE, "fields": {...}, "deleted": BOOL, "conflicts": [...]}`, one line:
    /// what `get --json` prints and `export` writes a line of.
    ///
    /// Written as text directly: an export of many items builds no JSON tree per item.
    public var jsonText: String {
        var out = #"{"id":"# + JSON.string(id.rawValue).text + #","type":"# + JSON.string(type).text + #","fields":{"#
        for (i, field) in fields.enumerated() {
            if i > 0 { out += "," }
            out += JSON.string(field.name.rawValue).text + ":" + field.value.jsonText
        }
        out += #"},"deleted":"# + (deleted ? "true" : "false") + #","conflicts":"#
        out += JSON.array(conflicts.map { .string($0.rawValue) }).text
        return out + "}"
    }
}

extension HistoryEntry {
    /// One entry of `history --json`.
    public var json: JSON {
        .object([
            ("field", .string(field.rawValue)), ("write", write.json),
            ("node", .string(dot.node.text)), ("writer", writerName.map(JSON.string) ?? .null),
            ("counter", .integer(Int64(clamping: dot.counter))),
            ("time", .string(WallClock.iso8601(milliseconds: timestamp.milliseconds))),
            ("live", .bool(isLive)),
        ])
    }
}

extension FieldConflict {
    /// One entry of `conflicts --json`: the distinct values, and each concurrent version with its
    /// writer (`node`, and its name when `names` knows it) and time.
    public func json(names: [NodeID: String] = [:]) -> JSON {
        .object([
            ("id", .string(item.rawValue)), ("field", .string(field.rawValue)),
            ("values", .array(values.map(\.json))), ("shown", shown.json),
            (
                "versions",
                .array(
                    versions.map { version in
                        .object([
                            ("value", value(of: version).json),
                            ("node", .string(version.dot.node.text)),
                            ("writer", names[version.dot.node].map(JSON.string) ?? .null),
                            ("time", .string(WallClock.iso8601(milliseconds: version.timestamp.milliseconds))),
                        ])
                    }
                )
            ),
        ])
    }
}

extension DamageReport {
    /// What `check --json` prints.
    public var json: JSON {
        .object([
            ("sound", .bool(isSound)), ("fields_checked", .integer(Int64(fieldsChecked))),
            ("problems", .array(problems.map(JSON.string))),
        ])
    }
}

extension Sequence<HistoryEntry> {
    /// What `history --json` prints: an array of ``HistoryEntry/json``.
    public var jsonText: String { JSON.array(map(\.json)).text }
}

extension FieldConflict {
    /// The value a version stands for: what it set (or the relay kept), or for a list write the
    /// merged list (lists never conflict with lists).
    public func value(of version: FieldVersion) -> Value {
        switch version.write {
        case .assign(let value), .overrule(let value, _, _): value
        case .list: values.first { if case .list = $0 { true } else { false } } ?? .null
        }
    }
}

extension Sequence<FieldConflict> {
    /// What `conflicts --json` prints: an array of ``FieldConflict/json(names:)``.
    public func jsonText(names: [NodeID: String] = [:]) -> String { JSON.array(map { $0.json(names: names) }).text }
}

extension ChangeEntry {
    /// One entry of the change feed, as `lansync watch --json` prints it and the API sends it:
    /// `{"seq", "time", "id", "type", "field", "kind", "value"}`.
    public var jsonText: String {
        #"{"seq":\#(seq),"time":"# + JSON.string(WallClock.iso8601(milliseconds: at)).text + #","id":"#
            + JSON.string(item.rawValue).text + #","type":"# + JSON.string(type).text + #","field":"#
            + JSON.string(field.rawValue).text + #","kind":"# + JSON.string(kind.name).text + #","value":"#
            + (value ?? "null") + "}"
    }
}
