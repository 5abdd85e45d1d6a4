/// The identity of one node (one replica) in a cluster.
///
/// 128 bits. In a running cluster it is derived from the node's public key (the transport layer
/// hashes the key), so a node cannot claim another's id without its private key. The core treats it
/// as opaque: it only needs equality and a total order, which breaks ties between concurrent writes
/// that carry the same timestamp.
///
/// Its text form is 26 characters of lowercase RFC 4648 base32 (no padding), stable across releases.
public struct NodeID: Hashable, Comparable, Sendable {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Builds an id from its first 16 bytes (extra bytes are ignored; fewer are zero-padded).
    public init<Bytes: Collection<UInt8>>(bytes: Bytes) {
        var h: UInt64 = 0
        var l: UInt64 = 0
        for (i, byte) in bytes.prefix(16).enumerated() {
            if i < 8 {
                h |= UInt64(byte) << (56 - 8 * UInt64(i))
            } else {
                l |= UInt64(byte) << (56 - 8 * UInt64(i - 8))
            }
        }
        self.init(high: h, low: l)
    }

    public static func < (lhs: NodeID, rhs: NodeID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        (0..<16).map { i in
            i < 8
                ? UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
                : UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i - 8)))
        }
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// The 26-character base32 text form: the 128 bits, then two zero bits, five at a time.
    ///
    /// Written into the string's own storage, with no array between: a replica turns ids into
    /// text and back for every row of its node table it reads, and a relay reads its whole
    /// version vector (a row per writer) for each delta it plans.
    public var text: String {
        let value = UInt128(high) << 64 | UInt128(low)
        return String(unsafeUninitializedCapacity: 26) { out in
            for i in 0..<25 { out[i] = Self.alphabet[Int(truncatingIfNeeded: (value >> (123 - 5 * i)) & 31)] }
            out[25] = Self.alphabet[Int(truncatingIfNeeded: (value & 7) << 2)]
            return 26
        }
    }

    /// The first characters of ``text``, enough to tell the nodes of one cluster apart on screen.
    public var short: String { String(text.prefix(7)) }

    /// Parses the 26-character text form; nil if it is not one.
    public init?(text: String) {
        var text = text
        guard let id = text.withUTF8({ NodeID(utf8: $0) }) else { return nil }
        self = id
    }

    /// Parses the text form from its UTF-8 bytes (a column SQLite returns, read in place); nil if
    /// they are not one.
    public init?(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 26 else { return nil }
        var value: UInt128 = 0
        for (index, c) in text.enumerated() {
            let digit: UInt8
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = c - UInt8(ascii: "a")
            case UInt8(ascii: "2")...UInt8(ascii: "7"): digit = c - UInt8(ascii: "2") + 26
            default: return nil
            }
            if index < 25 {
                value = value << 5 | UInt128(digit)
            } else {
                // 26 * 5 = 130 bits: the two trailing bits must be zero for the form to be canonical.
                guard digit & 3 == 0 else { return nil }
                value = value << 3 | UInt128(digit >> 2)
            }
        }
        self.init(high: UInt64(truncatingIfNeeded: value >> 64), low: UInt64(truncatingIfNeeded: value))
    }
}

extension NodeID: CustomStringConvertible {
    public var description: String { text }
}
