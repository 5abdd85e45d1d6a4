/// A field's value: what a user stores in an item.
///
/// Equality, hashing and ordering are *byte-exact*, never locale- or Unicode-aware:
/// - strings compare by their UTF-8 bytes (Swift's own `String ==` treats canonically equivalent
///   strings such as "é" and "e\u{301}" as equal, which would make two replicas holding different
///   bytes believe they agree);
/// - doubles compare by bit pattern, so `-0.0 != 0.0`, and a NaN equals itself (same bits), which keeps
///   equality reflexive and ordering total.
/// The total order (`<`) exists so every replica displays list elements and conflict siblings in
/// the same order: by kind (null < bool < integer < double < string < link < list), then by value.
public enum Value: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case list([Value])
    /// A link to another item, by its id (`@ID` on the command line, `{"ref": ID}` in JSON):
    /// stored and merged like any value; whether its target exists is only judged when read
    /// (`get`, `check --links`), since the target may be made, deleted or synced later.
    case ref(ItemID)
}

extension Value: Hashable {
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)): a.utf8EqualsExactly(b)
        case let (.list(a), .list(b)): a.elementsEqual(b)
        case let (.ref(a), .ref(b)): a.rawValue.utf8EqualsExactly(b.rawValue)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kindRank)
        switch self {
        case .null: break
        case .bool(let b): hasher.combine(b)
        case .integer(let i): hasher.combine(i)
        case .double(let d): hasher.combine(d.bitPattern)
        case .string(let s):
            s.hashUTF8(into: &hasher)
        case .list(let elements):
            hasher.combine(elements.count)
            for element in elements { hasher.combine(element) }
        case .ref(let id): id.rawValue.hashUTF8(into: &hasher)
        }
    }
}

extension Value: Comparable {
    public static func < (lhs: Value, rhs: Value) -> Bool {
        if lhs.kindRank != rhs.kindRank { return lhs.kindRank < rhs.kindRank }
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): return !a && b
        case let (.integer(a), .integer(b)): return a < b
        case let (.double(a), .double(b)): return a.totalOrderKey < b.totalOrderKey
        case let (.string(a), .string(b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case let (.list(a), .list(b)): return a.lexicographicallyPrecedes(b)
        case let (.ref(a), .ref(b)): return a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8)
        default: return false
        }
    }
}

extension Value {
    /// The value's kind as users see it in messages (`null`, `bool`, `integer`, `double`, `string`, `list`).
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .integer: "integer"
        case .double: "double"
        case .string: "string"
        case .list: "list"
        case .ref: "link"
        }
    }

    /// The items this value links to: itself if it is a link, its elements' links if a list.
    public var links: [ItemID] {
        switch self {
        case .ref(let id): [id]
        case .list(let elements): elements.flatMap(\.links)
        default: []
        }
    }

    /// True for the list kind, the only kind that merges by union.
    public var isList: Bool {
        if case .list = self { return true }
        return false
    }

    /// An upper bound of the value's encoded size in bytes, used to enforce ``Limits/maxValueBytes``
    /// before anything is written or sent.
    /// How deep lists nest in it: 0 for a scalar, 1 for a list of scalars (or an empty list).
    public var nesting: Int {
        guard case .list(let elements) = self else { return 0 }
        return 1 + (elements.map(\.nesting).max() ?? 0)
    }

    public var encodedSize: Int {
        switch self {
        case .null, .bool: 1
        case .integer, .double: 9
        case .string(let s): 5 + s.utf8.count
        case .list(let elements): elements.reduce(5) { $0 + $1.encodedSize }
        case .ref(let id): 5 + id.rawValue.utf8.count
        }
    }

    var kindRank: UInt8 {
        switch self {
        case .null: 0
        case .bool: 1
        case .integer: 2
        case .double: 3
        case .string: 4
        case .ref: 5
        case .list: 6
        }
    }
}

extension Double {
    /// Maps the bit pattern to an unsigned key whose order is IEEE 754 `totalOrder`
    /// (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN): a total order even with NaNs.
    var totalOrderKey: UInt64 {
        let bits = bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }
}

extension String {
    /// Byte-for-byte equality of the UTF-8 forms (unlike `==`, which equates canonically
    /// equivalent strings).
    package func utf8EqualsExactly(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        if let same = utf8.withContiguousStorageIfAvailable({ mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                mine.count == 0 || mine.baseAddress == theirs.baseAddress
                    || UnsafeRawBufferPointer(mine).elementsEqual(UnsafeRawBufferPointer(theirs))
            }
        }), let result = same {
            return result
        }
        return utf8.elementsEqual(other.utf8)
    }

    /// Hashes the UTF-8 bytes in one call, consistent with ``utf8EqualsExactly(_:)``.
    package func hashUTF8(into hasher: inout Hasher) {
        hasher.combine(utf8.count)
        if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
    }
}
