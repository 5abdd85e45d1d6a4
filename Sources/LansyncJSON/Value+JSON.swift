public import LansyncCore

extension Value {
    /// The value as a JSON node.
    public var json: JSON {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .integer(let i): .integer(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .list(let elements): .array(elements.map(\.json))
        case .ref(let id): .object([("ref", .string(id.rawValue))])
        }
    }

    /// The value as compact JSON text.
    public var jsonText: String { json.text }
}
