public import LansyncCore

/// A parsed JSON document, keeping what ``Value`` needs and JSON's other values: integers stay
/// distinct from doubles (`1` vs `1.0`), doubles keep their bits (`-0.0`, `5e-324`), and object
/// members keep their order.
///
/// Beyond RFC 8259, the non-finite doubles are written `NaN`, `Infinity` and `-Infinity` (as
/// Python's `json` module does), so every ``Value`` round-trips. The parser is total: any input
/// gives a node or a ``JSONError`` naming the offset, never a crash, with nesting bounded.
public indirect enum JSON: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(key: String, value: JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case let (.object(a), .object(b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key.utf8EqualsExactly($1.key) && $0.value == $1.value }
        case let (.array(a), .array(b)): a == b
        default: lhs.value == rhs.value && lhs.value != nil
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .object(let members):
            for m in members {
                m.key.hashUTF8(into: &hasher)
                hasher.combine(m.value)
            }
        case .array(let elements): hasher.combine(elements)
        default: hasher.combine(value)
        }
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key.utf8EqualsExactly(key) }?.value
    }

    /// The field value this node stands for; nil for objects other than a link `{"ref": ID}`
    /// (and arrays holding them).
    public var value: Value? {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .integer(let i): .integer(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .array(let elements):
            elements.reduce(into: [Value]?.some([])) { acc, element in
                if let v = element.value { acc?.append(v) } else { acc = nil }
            }.map(Value.list)
        case .object(let members):
            // The one object that is a value: a link, `{"ref": ID}`.
            if members.count == 1, members[0].key == "ref", case .string(let text) = members[0].value,
                let id = try? ItemID(text)
            {
                .ref(id)
            } else {
                nil
            }
        }
    }
}

/// Why a text is not JSON: what was expected, and where (a byte offset).
public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public let offset: Int

    static let integerOutOfRange =
        "integer out of range (at most 9223372036854775807 either way): write it as a string, or as a double such as 1e20"
    static let doubleOutOfRange =
        "number out of range for a double: write Infinity or -Infinity if that is what you mean"

    /// True for a number too large for its kind (refused rather than rounded).
    public var isNumberOutOfRange: Bool { message == Self.integerOutOfRange || message == Self.doubleOutOfRange }

    public var description: String { "\(message) at byte \(offset)" }
}

extension JSON {
    /// The deepest nesting the parser accepts.
    public static let maxDepth = 64

    /// Parses one JSON text (surrounding whitespace allowed).
    public init(parsing text: String) throws(JSONError) {
        var parser = JSONParser(bytes: Array(text.utf8))
        self = try parser.parseDocument()
    }

    /// The compact JSON text of this node.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .integer(let i): out += String(i)
        case .double(let d): out += JSON.format(d)
        case .string(let s): JSON.quote(s, into: &out)
        case .array(let elements):
            out += "["
            for (i, e) in elements.enumerated() {
                if i > 0 { out += "," }
                e.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, m) in members.enumerated() {
                if i > 0 { out += "," }
                JSON.quote(m.key, into: &out)
                out += ":"
                m.value.write(to: &out)
            }
            out += "}"
        }
    }

    static func format(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        // Swift's description is the shortest text that round-trips, and keeps a '.' or an
        // exponent, so a double never reads back as an integer.
        return d.description
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        // Most strings need no escaping: append them whole (the per-scalar loop below is the
        // largest cost of writing a synced field's shown value and history).
        // (0xC2 and 0xE2 start the C1 controls and the direction overrides, written as escapes
        // too so that JSON shown on a terminal cannot drive it: TerminalText.isControl. The
        // same bytes as ever for every other character: a replica's digest hashes this text.)
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c || $0 == 0x7f || $0 == 0xC2 || $0 == 0xE2 })
        {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where TerminalText.isControl(scalar):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
