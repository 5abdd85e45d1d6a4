import Crypto
public import LansyncCore

/// An invitation to join a cluster, as `lansync invite` prints it and `lansync join` reads it:
/// short enough to read out, with a checksum that catches any one mistyped character.
///
/// It carries the start of the cluster authority's fingerprint (the cluster id), so the new
/// machine can tell the real inviter from an impostor before it says anything; a one-time secret,
/// which the new machine proves it knows without sending it (``proof(publicKey:name:)``); and,
/// when known, the inviter's IPv4 address and port. The secret is worth something only to the
/// inviting machine, once, until the invite expires.
///
/// Text form: `LSJ1-` then groups of four Crockford base32 characters (no I, L, O or U; read
/// case-insensitively, with I and L read as 1 and O as 0), e.g. `LSJ1-7K2M-...`.
public struct InviteCode: Sendable, Equatable {
    /// Bytes of the cluster id the code pins: 80 bits, far beyond what forging a look-alike
    /// authority key could reach.
    public static let pinBytes = 10
    /// Bytes of the one-time secret: 80 bits, against guesses that must each be a connection to
    /// the inviter within the invite's life.
    public static let secretBytes = 10
    static let prefix = "LSJ1-"

    public let clusterPin: [UInt8]
    public let secret: [UInt8]
    /// Where the inviter listens, if the code says (IPv4 only: the code stays short).
    public let host: String?
    public let port: Int?

    public init(clusterID: NodeID, secret: [UInt8], host: String?, port: Int?) {
        clusterPin = Array(clusterID.bytes.prefix(Self.pinBytes))
        self.secret = secret
        if let host, let port, Self.ipv4(host) != nil, (1...65535).contains(port) {
            self.host = host
            self.port = port
        } else {
            self.host = nil
            self.port = nil
        }
    }

    /// A new random secret.
    public static func newSecret() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0.prefix(secretBytes)) }
    }

    /// True if `clusterID` is the cluster this code invites to.
    public func pins(_ clusterID: NodeID) -> Bool {
        Array(clusterID.bytes.prefix(Self.pinBytes)) == clusterPin
    }

    /// What the new machine sends instead of the secret: an HMAC, keyed by the secret, of the key
    /// it wants certified and the name it asks for. Only the inviter, which holds the secret, can
    /// check it; it says nothing of the secret to anyone else, and binds the secret to this key.
    public func proof(publicKey: [UInt8], name: String) -> [UInt8] {
        Self.proof(secret: secret, publicKey: publicKey, name: name)
    }

    public static func proof(secret: [UInt8], publicKey: [UInt8], name: String) -> [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(
                for: proofInput(publicKey: publicKey, name: name),
                using: SymmetricKey(data: secret)
            )
        )
    }

    /// True if `proof` was made with `secret` for this key and name (in constant time).
    public static func verify(proof: [UInt8], secret: [UInt8], publicKey: [UInt8], name: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(
            proof,
            authenticating: proofInput(publicKey: publicKey, name: name),
            using: SymmetricKey(data: secret)
        )
    }

    private static func proofInput(publicKey: [UInt8], name: String) -> [UInt8] {
        var w = ByteWriter()
        w.string("lansync join 1")
        w.data(publicKey)
        w.string(name)
        return w.bytes
    }

    // MARK: - Text form

    /// The code as people read it.
    public var text: String {
        var bytes = clusterPin + secret
        if let host, let port, let address = Self.ipv4(host) {
            bytes += address + [UInt8(port >> 8), UInt8(port & 0xff)]
        }
        let body = Self.base32(bytes + Self.crc16(bytes))
        var groups: [Substring] = []
        var rest = Substring(body)
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return Self.prefix + groups.joined(separator: "-")
    }

    /// Reads a code as `lansync join` was given it; throws ``InviteCodeError`` with what is wrong.
    public init(text: String) throws(InviteCodeError) {
        var body = text.uppercased().filter { !$0.isWhitespace && $0 != "-" }
        // The version digit reads like the body's: I and L as 1.
        guard body.hasPrefix("LSJ"), let version = body.dropFirst(3).first, "1IL".contains(version) else {
            throw .notACode
        }
        body.removeFirst(4)
        guard let bytes = Self.unbase32(body) else { throw .badCharacter }
        let plain = Self.pinBytes + Self.secretBytes
        guard bytes.count == plain + 2 || bytes.count == plain + 6 + 2 else { throw .wrongLength }
        let data = Array(bytes.dropLast(2))
        guard Self.crc16(data) == Array(bytes.suffix(2)) else { throw .checksum }
        clusterPin = Array(data[0..<Self.pinBytes])
        secret = Array(data[Self.pinBytes..<plain])
        if data.count > plain {
            let a = data[plain..<plain + 4]
            host = a.map(String.init).joined(separator: ".")
            port = Int(data[plain + 4]) << 8 | Int(data[plain + 5])
        } else {
            host = nil
            port = nil
        }
    }

    /// CRC-16/CCITT over the bytes, most significant bit first like the base32 text: it catches
    /// every error within 16 consecutive bits, so every mistyped character (5 bits) and every
    /// swap of two neighbouring ones.
    static func crc16(_ bytes: [UInt8]) -> [UInt8] {
        var crc: UInt16 = 0xffff
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return [UInt8(crc >> 8), UInt8(crc & 0xff)]
    }

    static func ipv4(_ host: String) -> [UInt8]? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }

    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    static func base32(_ bytes: [UInt8]) -> String {
        var out = ""
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return out
    }

    static func unbase32(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for character in text {
            let c: Character =
                switch character {
                case "I", "L": "1"
                case "O": "0"
                default: character
                }
            guard let value = alphabet.firstIndex(of: c) else { return nil }
            buffer = (buffer << 5 | value) & 0xffff
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xff))
                bits -= 8
            }
        }
        return out
    }
}

/// Why an invite code could not be read.
public enum InviteCodeError: Error, Equatable, Sendable, CustomStringConvertible {
    case notACode, badCharacter, wrongLength, checksum

    public var description: String {
        switch self {
        case .notACode:
            "not a lansync invite code (it starts with LSJ1-): copy the whole code that 'lansync invite' printed"
        case .badCharacter:
            "the invite code has a character codes never contain: check it against the one 'lansync invite' printed"
        case .wrongLength:
            "the invite code is too short or too long: check that no group of four is missing or doubled"
        case .checksum:
            "the invite code is mistyped (its checksum does not match): check each group of four against the one 'lansync invite' printed"
        }
    }
}
