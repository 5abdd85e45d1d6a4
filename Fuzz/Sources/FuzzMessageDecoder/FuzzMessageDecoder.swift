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
    var reader = ByteReader(bytes)
    _ = try? reader.fieldState()
    return 0
}
