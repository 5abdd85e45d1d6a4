/// The name of a field of an item.
///
/// Compared byte-exactly (see ``Value``). Names beginning with `_` are reserved for the fields
/// lansync keeps itself (``FieldName/type`` and ``FieldName/deleted``); users cannot write them.
public struct FieldName: Hashable, Comparable, Sendable {
    public let rawValue: String

    /// The item's type, a string register.
    public static let type = FieldName(unchecked: "_type")
    /// The item's tombstone, a bool register: deleted if any concurrent version says so.
    public static let deleted = FieldName(unchecked: "_deleted")

    /// A user field name; throws if it is empty, too long, reserved, or could make an assignment
    /// ambiguous: it may not contain `=` or control characters, nor end with `+` or `-`
    /// (`due-date=x` is fine; `tags-=x` removes from `tags`).
    public init(_ name: String) throws(EditError) {
        guard !name.isEmpty, name.utf8.count <= Limits.maxFieldNameBytes else {
            throw .invalidFieldName(name, reason: "must be 1 to \(Limits.maxFieldNameBytes) bytes")
        }
        try Self.checkSpelling(name)
        rawValue = name
    }

    /// The rules of a user field name other than its length: not reserved, no control characters
    /// or `=`, no `+` or `-` at the end.
    public static func checkSpelling(_ name: String) throws(EditError) {
        guard !name.hasPrefix("_") else {
            throw .invalidFieldName(name, reason: "names starting with '_' are reserved")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || $0 == "=" }) else {
            throw .invalidFieldName(name, reason: "control characters and '=' are not allowed")
        }
        guard !name.hasSuffix("+"), !name.hasSuffix("-") else {
            throw .invalidFieldName(name, reason: "a name may not end with '+' or '-'")
        }
    }

    /// A name read back from storage or the wire, where reserved names are legitimate.
    public init(unchecked name: String) { rawValue = name }

    public var isReserved: Bool { rawValue.hasPrefix("_") }

    public static func == (lhs: FieldName, rhs: FieldName) -> Bool { lhs.rawValue.utf8EqualsExactly(rhs.rawValue) }
    public func hash(into hasher: inout Hasher) { rawValue.hashUTF8(into: &hasher) }
    public static func < (lhs: FieldName, rhs: FieldName) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }
}

extension FieldName: CustomStringConvertible {
    public var description: String { rawValue }
}
