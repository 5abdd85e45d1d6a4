/// Writes the compact binary forms of core types: LEB128 varints, fixed-width integers and
/// length-prefixed bytes. The same forms are used in the SQLite file and on the wire.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Empties the buffer and keeps its room, for the next thing written.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    public mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    public mutating func signedVarint(_ v: Int64) {
        varint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
    }

    /// `v`'s 8 bytes, most significant first.
    public mutating func bigEndian(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
        }
    }

    public mutating func fixed64(_ v: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    public mutating func data<C: Collection<UInt8>>(_ d: C) {
        varint(UInt64(d.count))
        bytes.append(contentsOf: d)
    }

    public mutating func string(_ s: String) { data(s.utf8) }

    public mutating func raw<C: Collection<UInt8>>(_ d: C) { bytes.append(contentsOf: d) }
}

/// Why bytes could not be decoded. Decoding is total: malformed input always ends here.
public struct DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public let offset: Int

    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// Reads what ``ByteWriter`` writes, checking every length against what is left, so a lying
/// length can neither crash the reader nor make it allocate more than the input's size.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        offset = 0
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset == bytes.count }

    public func fail(_ message: String) -> DecodingError { DecodingError(message, offset: offset) }

    public mutating func byte() throws(DecodingError) -> UInt8 {
        guard offset < bytes.count else { throw fail("unexpected end of data") }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func varint() throws(DecodingError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64, !(shift == 63 && b > 1) else { throw fail("varint too long") }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
    }

    public mutating func signedVarint() throws(DecodingError) -> Int64 {
        let v = try varint()
        return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }

    public mutating func fixed64() throws(DecodingError) -> UInt64 {
        guard remaining >= 8 else { throw fail("unexpected end of data") }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 8
        return v
    }

    /// A count of items each at least `minimumSize` bytes long: refused if the rest of the input
    /// could not hold that many.
    public mutating func count(minimumSize: Int = 1) throws(DecodingError) -> Int {
        let n = try varint()
        guard n <= UInt64(remaining / max(minimumSize, 1)) else { throw fail("count \(n) exceeds the data") }
        return Int(n)
    }

    public mutating func data() throws(DecodingError) -> ArraySlice<UInt8> {
        let n = try count()
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    public mutating func raw(_ n: Int) throws(DecodingError) -> ArraySlice<UInt8> {
        guard n >= 0, remaining >= n else { throw fail("unexpected end of data") }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    public mutating func string() throws(DecodingError) -> String {
        let d = try data()
        guard let s = String(validating: d, as: UTF8.self) else { throw fail("text is not valid UTF-8") }
        return s
    }
}
