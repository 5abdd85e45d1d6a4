import LansyncCore

/// Frames: a 4-byte big-endian payload length, then the payload, at most
/// ``WireLimits/maxFrameBytes``. The payload is one ``Message``: a type byte and its body.
public enum Frame {
    /// What a length prefix announces: a frame of that many bytes, or a violation.
    public static func payloadLength(prefix: [UInt8]) throws(WireError) -> Int {
        precondition(prefix.count == 4)
        let length = prefix.reduce(0) { $0 << 8 | Int($1) }
        guard length > 0 else { throw WireError.malformed("empty frame") }
        guard length <= WireLimits.maxFrameBytes else { throw WireError.frameTooLarge(length) }
        return length
    }

    /// The bytes of one frame carrying `message`.
    public static func encode(_ message: Message) -> [UInt8] {
        let payload = MessageCoder.encode(message)
        let n = payload.count
        return [
            UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
            UInt8(truncatingIfNeeded: n),
        ] + payload
    }
}

/// Why bytes from a peer were refused. Each maps to a ``ProtocolError`` sent before closing.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case frameTooLarge(Int)
    case unknownMessageType(UInt8)

    /// Any error met while decoding, as a wire error.
    init(decoding error: any Error) {
        switch error {
        case let error as WireError: self = error
        case let error as DecodingError: self = .malformed(error.description)
        default: self = .malformed("\(error)")
        }
    }

    /// What was wrong with the peer's bytes (it is told the same in an error message).
    public var description: String { protocolError.description }

    public var protocolError: ProtocolError {
        switch self {
        case .malformed(let why): ProtocolError(.malformedMessage, why)
        case .frameTooLarge(let n):
            ProtocolError(.frameTooLarge, "frame of \(n) bytes exceeds \(WireLimits.maxFrameBytes)")
        case .unknownMessageType(let t): ProtocolError(.malformedMessage, "unknown message type \(t)")
        }
    }
}
