import LansyncCore
import LansyncTestSupport
import LansyncWire
import NIOCore
import NIOEmbedded
import Testing

@testable import LansyncTransport

/// The frame decoder driven byte by byte through an `EmbeddedChannel`: frames split anywhere,
/// several in one read, an over-size length refused before its body, and nothing read after a
/// bad frame.
@Suite struct FrameDecoderTests {
    func channel() -> EmbeddedChannel { EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder())) }

    func messages(_ channel: EmbeddedChannel) throws -> [Message] {
        var out: [Message] = []
        while let incoming = try channel.readInbound(as: Incoming.self) {
            guard case .message(let message) = incoming else {
                Issue.record("an invalid frame: \(incoming)")
                continue
            }
            out.append(message)
        }
        return out
    }

    func errors(_ channel: EmbeddedChannel) throws -> [WireError] {
        var out: [WireError] = []
        while let incoming = try channel.readInbound(as: Incoming.self) {
            if case .invalid(let error) = incoming { out.append(error) }
        }
        return out
    }

    let summary = Message.summary(versionVector: VersionVector([.node(1): 3, .node(2): 9]))

    @Test func aFrameSplitAnywhereDecodesOnceWhole() throws {
        let bytes = Frame.encode(summary)
        for cut in [1, 2, 3, 4, 5, bytes.count - 1] {
            let channel = channel()
            try channel.writeInbound(ByteBuffer(bytes: bytes[..<cut]))
            #expect(try messages(channel).isEmpty, "a message before the frame was whole (cut at \(cut))")
            try channel.writeInbound(ByteBuffer(bytes: bytes[cut...]))
            #expect(try messages(channel) == [summary], "cut at \(cut)")
            #expect(try channel.finish().isClean)
        }
    }

    @Test func aBodyArrivingByteByByteWaits() throws {
        let channel = channel()
        for byte in Frame.encode(.ack(sequence: 41)) {
            #expect(try messages(channel).isEmpty)
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
        }
        #expect(try messages(channel) == [.ack(sequence: 41)])
    }

    @Test func framesAndALeftoverInOneReadAreKeptApart() throws {
        let channel = channel()
        let third = Frame.encode(.ack(sequence: 3))
        let bytes = Frame.encode(.ack(sequence: 1)) + Frame.encode(summary) + third.prefix(5)
        try channel.writeInbound(ByteBuffer(bytes: bytes))
        #expect(try messages(channel) == [.ack(sequence: 1), summary])
        try channel.writeInbound(ByteBuffer(bytes: third.dropFirst(5)))
        #expect(try messages(channel) == [.ack(sequence: 3)], "the leftover began the next frame")
    }

    /// An over-size length is refused as its 4 bytes arrive, before any of the body is buffered;
    /// what follows is discarded.
    @Test func anOverSizeLengthIsRefusedAtOnce() throws {
        let channel = channel()
        let length = WireLimits.maxFrameBytes + 1
        let prefix: [UInt8] = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: length >> $0) }
        try channel.writeInbound(ByteBuffer(bytes: prefix))
        #expect(try errors(channel) == [.frameTooLarge(length)])
        try channel.writeInbound(ByteBuffer(bytes: Frame.encode(.ack(sequence: 1))))
        #expect(try channel.readInbound(as: Incoming.self) == nil, "a frame read after a refused one")
    }

    @Test func anUndecodablePayloadEndsTheStream() throws {
        let channel = channel()
        try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, 2, 0xEE, 0x00] + Frame.encode(.ack(sequence: 1))))
        let errors = try errors(channel)
        #expect(
            errors.count == 1
                && errors.first.map { if case .unknownMessageType(0xEE) = $0 { true } else { false } } == true,
            "\(errors)"
        )
        try channel.writeInbound(ByteBuffer(bytes: Frame.encode(.ack(sequence: 2))))
        #expect(try channel.readInbound(as: Incoming.self) == nil, "a frame read after a bad one")
    }

    @Test func anEmptyFrameIsMalformed() throws {
        let channel = channel()
        try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, 0]))
        #expect(try errors(channel) == [.malformed("empty frame")])
    }

    /// At the end of the stream, whole frames still buffered are delivered; a partial one is not.
    @Test func theEndOfTheStreamDeliversWholeFramesOnly() throws {
        let channel = channel()
        let bytes = Frame.encode(.ack(sequence: 1)) + Frame.encode(.ack(sequence: 2)).dropLast()
        try channel.writeInbound(ByteBuffer(bytes: bytes))
        #expect(try messages(channel) == [.ack(sequence: 1)])
        _ = try? channel.finish()
        #expect(try channel.readInbound(as: Incoming.self) == nil)
    }
}
