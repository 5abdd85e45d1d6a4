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

    /// The 26-character base32 text form.
    public var text: String {
        var out: [UInt8] = []
        out.reserveCapacity(26)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(Self.alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(Self.alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The first characters of ``text``, enough to tell the nodes of one cluster apart on screen.
    public var short: String { String(text.prefix(7)) }

    /// Parses the 26-character text form; nil if it is not one.
    public init?(text: String) {
        let chars = Array(text.utf8)
        guard chars.count == 26 else { return nil }
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = Self.alphabet.firstIndex(of: c) else { return nil }
            buffer = (buffer << 5) | UInt32(v)
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        // 26 * 5 = 130 bits: the two trailing bits must be zero for the form to be canonical.
        guard bytes.count == 16, buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        self.init(bytes: bytes)
    }
}

extension NodeID: CustomStringConvertible {
    public var description: String { text }
}
