public import LansyncCore
public import LansyncWire
public import NIOCore
import NIOConcurrencyHelpers
import NIOPosix
import NIOSSL
import NIOTLS

/// A connection whose TLS handshake succeeded: the framed message channel and who is at the
/// other end, as its certificate proves.
public struct PeerConnection: Sendable {
    public let channel: NIOAsyncChannel<Incoming, Message>
    public let peerNodeID: NodeID
    /// The remote address, for display.
    public let remoteAddress: String
    /// True if this node dialled the connection.
    public let outbound: Bool
    /// Bytes moved on the wire so far.
    public let counters: WireCounters
}

/// Why a connection could not be made or accepted.
public struct TransportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// TCP + TLS for lansync: a listener that accepts peers, and a dialer. Both frame messages and
/// prove the peer's identity before handing the connection over.
///
/// Limits that keep a node up whatever a stranger does: at most ``maxPendingHandshakes``
/// connections may be mid-handshake at once (more are closed at once); a handshake that does not
/// finish within ``handshakeTimeout`` is closed; frames are bounded by
/// ``WireLimits/maxFrameBytes``.
public final class Transport: Sendable {
    public static let maxPendingHandshakes = 16
    public static let handshakeTimeout: TimeAmount = .seconds(10)

    let identity: TLSIdentity
    let group: any EventLoopGroup
    let serverContext: NIOSSLContext
    let clientContext: NIOSSLContext
    private let pending = NIOLockedValueBox(0)

    public init(identity: TLSIdentity, group: any EventLoopGroup) throws {
        self.identity = identity
        self.group = group
        serverContext = try identity.serverContext()
        clientContext = try identity.clientContext()
    }

    /// A bound listener: iterate ``Listener/connections`` to get each authenticated peer.
    public struct Listener: Sendable {
        public let channel: NIOAsyncChannel<EventLoopFuture<PeerConnection>, Never>
        public let port: Int
    }

    /// Binds `host:port` (port 0 picks a free one).
    public func listen(host: String, port: Int) async throws -> Listener {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.configure(channel, tls: NIOSSLServerHandler(context: self.serverContext), outbound: false)
                }
            }
        return Listener(channel: channel, port: channel.channel.localAddress?.port ?? port)
    }

    /// Dials `host:port` and completes the TLS handshake.
    public func connect(host: String, port: Int, timeout: TimeAmount = .seconds(5)) async throws -> PeerConnection {
        let future = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.configure(channel, tls: try NIOSSLClientHandler(context: self.clientContext, serverHostname: nil), outbound: true)
                }
            }
        return try await future.get()
    }

    /// Dials `host:port`, completes the TLS handshake, and returns an unframed byte channel: for
    /// tools that must send arbitrary bytes to a peer (the tests' garbage sender), never for sync.
    public func connectRaw(host: String, port: Int) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        let future = try await ClientBootstrap(group: group)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: NodeID.self)
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: self.clientContext, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(promise: promise, timeout: Self.handshakeTimeout))
                    return promise.futureResult.flatMapThrowing { _ in
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            }
        return try await future.get()
    }

    /// Builds the pipeline: TLS, the handshake watcher, framing. Returns the future of the
    /// authenticated connection.
    private func configure(_ channel: any Channel, tls: NIOSSLHandler, outbound: Bool) throws -> EventLoopFuture<PeerConnection> {
        let overLimit = pending.withLockedValue { count -> Bool in
            if count >= Self.maxPendingHandshakes { return true }
            count += 1
            return false
        }
        let promise = channel.eventLoop.makePromise(of: NodeID.self)
        if overLimit {
            channel.close(promise: nil)
            promise.fail(TransportError("too many connections waiting for a handshake"))
        } else {
            promise.futureResult.whenComplete { _ in self.pending.withLockedValue { $0 -= 1 } }
        }
        let counters = WireCounters()
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(ByteCountingHandler(counters: counters))
        try sync.addHandler(tls)
        try sync.addHandler(HandshakeWatcher(promise: promise, timeout: Self.handshakeTimeout))
        let remote = channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        // Framing and the async wrapper come only once the peer is proven: a connection that
        // fails its handshake never holds one (an unused wrapper must not be dropped).
        return promise.futureResult.flatMapThrowing { peer in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ByteToMessageHandler(FrameDecoder()))
            try sync.addHandler(MessageToByteHandler(FrameEncoder()))
            let asyncChannel = try NIOAsyncChannel<Incoming, Message>(
                wrappingChannelSynchronously: channel,
                configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 4)))
            return PeerConnection(channel: asyncChannel, peerNodeID: peer, remoteAddress: remote, outbound: outbound, counters: counters)
        }
    }
}

/// Completes a promise with the peer's node id once the TLS handshake has verified its
/// certificate, or fails it (closing the channel) on error, early close or timeout.
final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let promise: EventLoopPromise<NodeID>
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var done = false

    init(promise: EventLoopPromise<NodeID>, timeout: TimeAmount) {
        self.promise = promise
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let seconds = timeout.nanoseconds / 1_000_000_000
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (watcher, context) = bound.value
            watcher.fail(context, TransportError("TLS handshake not finished within \(seconds) s"))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event, !done {
            do {
                let handler = try context.pipeline.syncOperations.handler(type: NIOSSLHandler.self)
                guard let certificate = handler.peerCertificate else { throw TransportError("peer sent no certificate") }
                let id = try TLSIdentity.nodeID(of: certificate)
                done = true
                timer?.cancel()
                promise.succeed(id)
            } catch {
                fail(context, error)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done { fail(context, TransportError("TLS handshake failed: \(error)")) } else { context.fireErrorCaught(error) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { fail(context, TransportError("connection closed during the TLS handshake")) }
        context.fireChannelInactive()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard !done else { return }
        done = true
        timer?.cancel()
        promise.fail(error)
        context.close(promise: nil)
    }
}
