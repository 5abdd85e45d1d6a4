/// The id of an item: client generated (a UUIDv7 by default), so items created offline never need
/// renumbering and can reference each other before any sync.
///
/// Any 1 to 128 characters from `A-Z a-z 0-9 . _ : -` are accepted, so users may pick their own
/// (`--id`); ids compare byte-exactly.
public struct ItemID: Hashable, Comparable, Sendable {
    public let rawValue: String

    public init(_ text: String) throws(EditError) {
        guard !text.isEmpty, text.utf8.count <= Limits.maxItemIDBytes,
            text.utf8.allSatisfy({ Self.allowed($0) })
        else { throw .invalidItemID(text) }
        rawValue = text
    }

    /// An id read back from storage, already validated when written.
    public init(unchecked text: String) { rawValue = text }

    private static func allowed(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Time and
    /// randomness are passed in, so the core stays free of I/O.
    public static func uuidV7(milliseconds: UInt64, using random: inout some RandomNumberGenerator) -> ItemID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(i))) }
        let r1 = random.next() as UInt64
        let r2 = random.next() as UInt64
        for i in 6..<16 { bytes[i] = UInt8(truncatingIfNeeded: (i < 11 ? r1 : r2) >> (8 * UInt64(i % 8))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0f)  // version 7
        return uuid(bytes)
    }

    /// A UUIDv8 (RFC 9562's custom version) made of the first 16 bytes of `digest`: the id an
    /// import gives a line without one, the same each time the same line is imported.
    public static func uuidV8(digest: some Sequence<UInt8>) -> ItemID {
        var bytes = Array(digest.prefix(16))
        precondition(bytes.count == 16, "a UUID takes 16 bytes")
        bytes[6] = 0x80 | (bytes[6] & 0x0f)  // version 8
        return uuid(bytes)
    }

    private static func uuid(_ bytes: [UInt8]) -> ItemID {
        var bytes = bytes
        bytes[8] = 0x80 | (bytes[8] & 0x3f)  // RFC 9562 variant
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(i) { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 15)])
        }
        return ItemID(unchecked: String(decoding: out, as: UTF8.self))
    }

    public static func == (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue.utf8EqualsExactly(rhs.rawValue) }
    public func hash(into hasher: inout Hasher) { rawValue.hashUTF8(into: &hasher) }
    public static func < (lhs: ItemID, rhs: ItemID) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }
}

extension ItemID: CustomStringConvertible {
    public var description: String { rawValue }
}
