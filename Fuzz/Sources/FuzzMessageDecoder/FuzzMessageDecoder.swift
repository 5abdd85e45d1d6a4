import LansyncCore
import LansyncWire

/// libFuzzer entry point: every input must decode to a message or be refused, never crash or
/// hang; and a decoded message must survive encode → decode unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMessageDecoder(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    if bytes.count >= 4 { _ = try? Frame.payloadLength(prefix: Array(bytes.prefix(4))) }
    if let message = try? MessageCoder.decode(bytes) {
        let again = try? MessageCoder.decode(MessageCoder.encode(message))
        precondition(again == message, "a decoded message does not survive a round trip")
    }
    // The replica file's field state form (the wire's is inside every batch above).
    if let state = try? FieldState(decoding: bytes) {
        precondition(
            (try? FieldState(decoding: state.encoded)) == state,
            "a decoded field state does not survive a round trip"
        )
    }
    return 0
}
