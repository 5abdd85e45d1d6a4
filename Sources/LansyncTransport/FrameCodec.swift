public import LansyncWire
import NIOCore

/// What arrives from a peer: a message, or bytes that were not one.
public enum Incoming: Sendable {
    case message(Message)
    case invalid(WireError)
}

/// Splits the byte stream into frames and decodes each. An over-size length is refused as soon as
/// its 4 bytes arrive (nothing more is buffered); after any invalid frame the decoder discards
/// the rest, since the session is ending.
final class FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = Incoming
    private var failed = false

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            return .needMoreData
        }
        guard let prefix = buffer.getBytes(at: buffer.readerIndex, length: 4) else { return .needMoreData }
        let length: Int
        do {
            length = try Frame.payloadLength(prefix: prefix)
        } catch {
            failed = true
            context.fireChannelRead(wrapInboundOut(.invalid(error)))
            return .continue
        }
        guard buffer.readableBytes >= 4 + length else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        let payload = buffer.readBytes(length: length)!
        do {
            context.fireChannelRead(wrapInboundOut(.message(try MessageCoder.decode(payload))))
        } catch {
            failed = true
            context.fireChannelRead(wrapInboundOut(.invalid(error)))
        }
        return .continue
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Writes each outgoing message as one frame.
final class FrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = Message

    func encode(data: Message, out: inout ByteBuffer) throws {
        out.writeBytes(Frame.encode(data))
    }
}
