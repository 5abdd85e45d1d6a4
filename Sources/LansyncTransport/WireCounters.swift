import NIOConcurrencyHelpers
import NIOCore

/// Bytes a connection moved on the wire (TLS records included), counted at the socket end of
/// the pipeline.
public final class WireCounters: Sendable {
    private let counts = NIOLockedValueBox((sent: 0, received: 0))

    public init() {}

    public var sent: Int { counts.withLockedValue { $0.sent } }
    public var received: Int { counts.withLockedValue { $0.received } }

    func add(sent: Int = 0, received: Int = 0) {
        counts.withLockedValue {
            $0.sent += sent
            $0.received += received
        }
    }
}

/// Counts the bytes passing between the socket and TLS.
final class ByteCountingHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let counters: WireCounters

    init(counters: WireCounters) { self.counters = counters }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        counters.add(received: unwrapInboundIn(data).readableBytes)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        counters.add(sent: unwrapOutboundIn(data).readableBytes)
        context.write(data, promise: promise)
    }
}
