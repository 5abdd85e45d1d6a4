/// A search over items' words (`lansync list --search`, the API's `q`, the page's search box):
/// an item matches when each word of the search occurs, case folded, somewhere in its text,
/// the item's id, its type, its field names and its fields' shown values (``text(id:type:fields:)``).
///
/// Pure: the store keeps every item's text in a substring index and asks it, this type says what
/// the text is and what matches, so the two can be checked against each other.
public struct ItemSearch: Sendable, Equatable {
    /// The words, case folded, without repeats, in the order given.
    public let words: [String]

    /// The search `text` asks for, or nil if it holds no word (only spaces). A NUL separates
    /// words as a space does (SQLite's functions would read a word only up to it).
    public init?(_ text: String) {
        var words: [String] = []
        let spaced = String(String.UnicodeScalarView(text.lowercased().unicodeScalars.map { $0 == "\0" ? " " : $0 }))
        for word in spaced.split(whereSeparator: \.isWhitespace).map(String.init)
        where !words.contains(word) {
            words.append(word)
        }
        guard !words.isEmpty else { return nil }
        self.words = words
    }

    /// Whether an item whose ``text(id:type:fields:)`` is `text` matches: each word's UTF-8
    /// bytes occur in the text's, as SQLite's `instr` finds them (a word may match inside a
    /// character: `*` finds `*` followed by a combining mark).
    public func matches(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return words.allSatisfy { bytes.firstRange(of: Array($0.utf8)) != nil }
    }

    /// What a search looks in for an item: its id, type, field names and shown values, one per
    /// line, case folded. A word never spans two lines, so no search finds the end of one value
    /// joined to the start of the next. Reserved fields (`_type`, `_deleted`) are left out (the
    /// type is there as itself), and so are fields without a value (unset).
    public static func text(id: ItemID, type: String, fields: [(name: FieldName, value: Value?)]) -> String {
        var lines = [id.rawValue, type]
        for (name, value) in fields.sorted(by: { $0.name < $1.name }) where !name.isReserved {
            guard let value else { continue }  // unset: the field is gone
            lines.append(name.rawValue)
            append(value, to: &lines)
        }
        return lines.joined(separator: "\n").lowercased()
    }

    private static func append(_ value: Value, to lines: inout [String]) {
        switch value {
        case .null: break
        case .bool(let b): lines.append(b ? "true" : "false")
        case .integer(let n): lines.append(String(n))
        case .double(let d): lines.append(d.description)
        case .string(let s): lines.append(s)
        case .ref(let id): lines.append("@" + id.rawValue)
        case .list(let elements): for element in elements { append(element, to: &lines) }
        }
    }
}
