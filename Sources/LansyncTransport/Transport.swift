import Foundation
public import LansyncCore
public import LansyncWire
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// A connection whose TLS handshake succeeded: the framed message channel and who is at the
/// other end, as its certificate proves.
public struct PeerConnection: Sendable {
    public let channel: NIOAsyncChannel<Incoming, Message>
    public let peerNodeID: NodeID
    /// The remote address, for display: `10.0.0.2:7420`, `[fd00::2]:7420` (an IPv4 peer of a
    /// dual-stack listener shows as IPv4).
    public let remoteAddress: String
    /// The remote IP address alone, as ``remoteAddress`` shows it (without a link-local scope).
    public let remoteIP: String?
    /// True if this node dialled the connection.
    public let outbound: Bool
    /// Bytes moved on the wire so far.
    public let counters: WireCounters
}

/// A connection a listener accepted: a member, proven by its certificate, or a machine that
/// presented none, which may only ask to join with an invite.
public enum InboundConnection: Sendable {
    case peer(PeerConnection)
    case joiner(JoinerConnection)
}

/// An inbound connection whose TLS handshake succeeded without a client certificate. The node
/// reads one ``Message/joinRequest(_:)`` from it, answers, and closes it; nothing else is spoken
/// on it (Docs/PROTOCOL.md, "Joining").
public struct JoinerConnection: Sendable {
    public let channel: NIOAsyncChannel<Incoming, Message>
    /// The remote address, for display.
    public let remoteAddress: String
}

/// Why a connection could not be made or accepted: one line for people, never a library's enum
/// case.
public struct TransportError: CodedError, Sendable {
    public let description: String
    /// ``ErrorCode/refused`` when a certificate was refused (``refusal`` says how), else
    /// ``ErrorCode/unavailable``: a connection that may work another time.
    public var code: ErrorCode { refusal == nil ? .unavailable : .refused }
    /// Set when a certificate was refused (by either side): the stable code `status` and the
    /// logs name, e.g. ``ProtocolError/Code/wrongCluster``.
    public let refusal: ProtocolError.Code?
    /// The remote IP address (without the port, which a client picks anew each time) of a
    /// connection that failed its handshake.
    public var peer: String?

    public init(_ description: String, refusal: ProtocolError.Code? = nil) {
        self.description = description
        self.refusal = refusal
    }

    /// Describes what SwiftNIO reports when a dial fails.
    init(connecting error: any Error, timeout: TimeAmount) {
        switch error {
        case let error as TransportError:
            self = error
        case ChannelError.connectTimeout:
            self.init(
                "no answer within \(timeout.nanoseconds / 1_000_000_000) s: is the address right, and the machine up?"
            )
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first {
                self.init(connecting: first.error, timeout: timeout)
            } else if error.dnsAError != nil || error.dnsAAAAError != nil {
                self.init("cannot resolve \(error.host): check the name")
            } else {
                self.init("cannot reach \(error.host):\(error.port)")
            }
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            self.init("connection refused: no node listens there")
        default:
            self.init(Self.describing(error))
        }
    }

    /// Describes why listening on `address` failed, with what to do.
    init(listeningOn address: String, error: any Error) {
        let errno = (error as? IOError)?.errnoCode
        switch errno {
        case EADDRINUSE:
            self.init(
                "cannot listen on \(address): the port is in use (another lansync node, or another program): stop it, or give this node another port with --listen HOST:PORT"
            )
        case EADDRNOTAVAIL:
            self.init(
                "cannot listen on \(address): this machine has no such address: give one of its own addresses (or 0.0.0.0) with --listen HOST:PORT"
            )
        case EACCES:
            self.init(
                "cannot listen on \(address): permission denied (ports below 1024 need root): give a port of 1024 or more with --listen HOST:PORT"
            )
        default:
            self.init("cannot listen on \(address): \(Self.describing(error)): check --listen HOST:PORT")
        }
    }

    /// One line for people about what SwiftNIO, NIOSSL or the system reported, in place of the
    /// library's enum case.
    public static func describing(_ error: any Error) -> String {
        switch error {
        case let error as TransportError:
            return error.description
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case ChannelError.connectTimeout(let timeout):
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        case ChannelError.ioOnClosedChannel, ChannelError.alreadyClosed, ChannelError.outputClosed,
            ChannelError.inputClosed,
            ChannelError.eof:
            return "the connection closed"
        case is ChannelError:
            return "the connection failed"
        case NIOSSLError.uncleanShutdown:
            return "the peer closed the connection without ending TLS"
        case is NIOSSLError:
            return "TLS failed"
        case let error as any CustomStringConvertible:
            return error.description
        default:
            return "\(type(of: error))"
        }
    }
}

/// TCP + TLS for lansync: a listener that accepts peers, and a dialer. Both frame messages and
/// prove the peer's identity before handing the connection over.
///
/// Limits that keep a node up and reachable whatever strangers do: pending handshakes are bounded
/// per source and in all, inbound apart from outbound (``HandshakeSlots``); an inbound connection
/// that sends nothing within ``firstByteTimeout`` is closed, and any handshake that does not finish
/// within ``handshakeTimeout``; frames are bounded by ``WireLimits/maxFrameBytes``.
public final class Transport: Sendable {
    public static let handshakeTimeout: TimeAmount = .seconds(10)
    /// A TLS client speaks first: an inbound connection silent this long is no client of ours.
    public static let firstByteTimeout: TimeAmount = .seconds(2)

    let identity: TLSIdentity
    let group: any EventLoopGroup
    let serverContext: NIOSSLContext
    let clientContext: NIOSSLContext
    private let slots = HandshakeSlots()

    public init(identity: TLSIdentity, group: any EventLoopGroup) throws {
        self.identity = identity
        self.group = group
        serverContext = try identity.serverContext()
        clientContext = try identity.clientContext()
    }

    /// A bound listener: iterate ``Listener/connections`` to get each authenticated peer.
    public struct Listener: Sendable {
        public let channel: NIOAsyncChannel<EventLoopFuture<InboundConnection>, Never>
        /// The host bound: the one asked for, or `0.0.0.0` where `::` was asked for on a machine
        /// without IPv6.
        public let host: String
        public let port: Int
    }

    /// Binds `host:port` (port 0 picks a free one). `::` listens on both families (IPv4 peers
    /// arrive as v4-mapped addresses, shown as IPv4), whatever `net.ipv6.bindv6only` says; on a
    /// machine without IPv6 it falls back to `0.0.0.0`.
    public func listen(host: String, port: Int) async throws(TransportError) -> Listener {
        do {
            return try await bind(host: host, port: port)
        } catch let error as IOError where host == "::" && error.errnoCode == EAFNOSUPPORT {
            do {
                return try await bind(host: "0.0.0.0", port: port)
            } catch {
                throw TransportError(listeningOn: "0.0.0.0:\(port)", error: error)
            }
        } catch {
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw TransportError(listeningOn: shown, error: error)
        }
    }

    private func bind(host: String, port: Int) async throws -> Listener {
        // Nothing about one accepted connection may fail the listener: NIO ends the stream of
        // accepted connections (and so the node's accept loop) on an error setting one up, so
        // the child's option and pipeline are set here, and a failure closes only that child.
        var bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
        if host == "::" {
            bootstrap = bootstrap.serverChannelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only),
                value: 0
            )
        }
        // An IP address is bound as given, never through getaddrinfo: that refuses `::` on a
        // machine with no IPv6 address configured, where the socket would work.
        let accept: @Sendable (any Channel) -> EventLoopFuture<EventLoopFuture<InboundConnection>> = { channel in
            channel.eventLoop.makeSucceededFuture(self.accepted(channel))
        }
        let channel =
            if let address = try? SocketAddress(ipAddress: host, port: port) {
                try await bootstrap.bind(to: address, childChannelInitializer: accept)
            } else {
                try await bootstrap.bind(host: host, port: port, childChannelInitializer: accept)
            }
        return Listener(channel: channel, host: host, port: channel.channel.localAddress?.port ?? port)
    }

    /// Sets up an accepted connection; never throws: a connection that cannot be set up (closed
    /// under it, out of resources) is closed, and its future fails, for that connection alone.
    private func accepted(_ channel: any Channel) -> EventLoopFuture<InboundConnection> {
        do {
            try? channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1)
            let check = PeerCheck()
            return try configure(
                channel,
                tls: NIOSSLServerHandler(
                    context: serverContext,
                    customVerificationCallback: identity.verifier(check)
                ),
                check: check,
                outbound: false
            )
        } catch {
            channel.close(promise: nil)
            var failure = TransportError("could not set up the connection: \(TransportError.describing(error))")
            failure.peer = channel.remoteAddress?.shownIP
            return channel.eventLoop.makeFailedFuture(failure)
        }
    }

    /// Dials `host:port` and completes the TLS handshake.
    public func connect(
        host: String,
        port: Int,
        timeout: TimeAmount = .seconds(5)
    ) async throws(TransportError) -> PeerConnection {
        try await connect(toFirstOf: [(host, port)], timeout: timeout)
    }

    /// Dials the first of `candidates` (IP addresses; a scoped link-local IPv6 one is written
    /// `fe80::1%eth0`) that answers, with Happy Eyeballs (``CandidateResolver``): the next
    /// candidate is tried 250 ms after the one before unless a connection came first, and
    /// `timeout` bounds the whole. Then completes the TLS handshake with the one that answered;
    /// ``PeerConnection/remoteIP`` says which. A single candidate may be a host name.
    public func connect(
        toFirstOf candidates: [(host: String, port: Int)],
        timeout: TimeAmount = .seconds(5)
    ) async throws(TransportError) -> PeerConnection {
        guard let first = candidates.first else { throw TransportError("no address to dial") }
        do {
            var bootstrap = ClientBootstrap(group: group)
            if candidates.count > 1 {
                let loop = group.next()
                guard let resolver = CandidateResolver(loop: loop, candidates: candidates) else {
                    throw TransportError("none of the addresses to dial is an IP address")
                }
                bootstrap = ClientBootstrap(group: loop).resolver(resolver)
            }
            let future =
                try await bootstrap
                .connectTimeout(timeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connect(host: first.host, port: first.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let check = PeerCheck()
                        return try self.configure(
                            channel,
                            tls: try NIOSSLClientHandler(
                                context: self.clientContext,
                                serverHostname: nil,
                                customVerificationCallback: self.identity.verifier(check)
                            ),
                            check: check,
                            outbound: true
                        )
                    }
                }
            guard case .peer(let connection) = try await future.get() else {
                // configure() only yields a joiner for an inbound connection.
                throw TransportError("the peer sent no certificate")
            }
            return connection
        } catch {
            throw TransportError(connecting: error, timeout: timeout)
        }
    }

    /// Dials `host:port`, completes the TLS handshake, and returns an unframed byte channel: for
    /// tools that must send arbitrary bytes to a peer (the tests' garbage sender), never for sync.
    public func connectRaw(host: String, port: Int) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        let future = try await ClientBootstrap(group: group)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: NodeID?.self)
                    let check = PeerCheck()
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(
                            context: self.clientContext,
                            serverHostname: nil,
                            customVerificationCallback: self.identity.verifier(check)
                        )
                    )
                    try channel.pipeline.syncOperations.addHandler(
                        HandshakeWatcher(
                            promise: promise,
                            timeout: Self.handshakeTimeout,
                            firstByte: nil,
                            counters: nil,
                            check: check
                        )
                    )
                    return promise.futureResult.flatMapThrowing { _ in
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            }
        return try await future.get()
    }

    /// Builds the pipeline: TLS, the handshake watcher, framing. Returns the future of the
    /// authenticated connection (or, inbound only, of one that presented no certificate).
    private func configure(
        _ channel: any Channel,
        tls: NIOSSLHandler,
        check: PeerCheck,
        outbound: Bool
    ) throws -> EventLoopFuture<InboundConnection> {
        let promise = channel.eventLoop.makePromise(of: NodeID?.self)
        let counters = WireCounters()
        if outbound {
            if slots.admitOutbound() {
                promise.futureResult.whenComplete { _ in self.slots.releaseOutbound() }
            } else {
                channel.close(promise: nil)
                promise.fail(TransportError("too many of this node's own connections waiting for a handshake"))
            }
        } else {
            slots.admitInbound(channel, source: channel.remoteAddress?.shownIP ?? "?", counters: counters)
            promise.futureResult.whenComplete { _ in self.slots.releaseInbound(channel) }
        }
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(ByteCountingHandler(counters: counters))
        try sync.addHandler(tls)
        try sync.addHandler(
            HandshakeWatcher(
                promise: promise,
                timeout: Self.handshakeTimeout,
                firstByte: outbound ? nil : Self.firstByteTimeout,
                counters: counters,
                check: check,
                allowsNoCertificate: !outbound
            )
        )
        let remote = channel.remoteAddress?.shown ?? "?"
        // Framing and the async wrapper come only once the peer is proven: a connection that
        // fails its handshake never holds one (an unused wrapper must not be dropped).
        return promise.futureResult.flatMapErrorThrowing { error in
            guard var error = error as? TransportError else { throw error }
            error.peer = channel.remoteAddress?.shownIP
            throw error
        }.flatMapThrowing { peer in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ByteToMessageHandler(FrameDecoder()))
            try sync.addHandler(MessageToByteHandler(FrameEncoder()))
            let asyncChannel = try NIOAsyncChannel<Incoming, Message>(
                wrappingChannelSynchronously: channel,
                configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 4))
            )
            guard let peer else { return .joiner(JoinerConnection(channel: asyncChannel, remoteAddress: remote)) }
            return .peer(
                PeerConnection(
                    channel: asyncChannel,
                    peerNodeID: peer,
                    remoteAddress: remote,
                    remoteIP: channel.remoteAddress?.shownIP,
                    outbound: outbound,
                    counters: counters
                )
            )
        }
    }
}

/// Completes a promise with the peer's node id once the TLS handshake has verified its
/// certificate (with nil if it presented none and that is allowed: a machine asking to join), or
/// fails it (closing the channel) on error, early close or timeout.
final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let promise: EventLoopPromise<NodeID?>
    private let timeout: TimeAmount
    private let allowsNoCertificate: Bool
    private let check: PeerCheck?
    private let firstByte: TimeAmount?
    private let counters: WireCounters?
    /// Watching until the handshake ends one way or the other, with the timers that end it if
    /// it takes too long; then settled, and deaf to whatever the channel reports after.
    private enum Phase {
        case watching(timers: [Scheduled<Void>])
        case settled
    }
    private var phase = Phase.watching(timers: [])

    /// Ends the watch (cancelling its timers); false if it had ended already.
    private func settle() -> Bool {
        guard case .watching(let timers) = phase else { return false }
        phase = .settled
        for timer in timers { timer.cancel() }
        return true
    }

    private var isWatching: Bool { if case .watching = phase { true } else { false } }

    /// - Parameter firstByte: close the connection if the peer has sent nothing by then.
    init(
        promise: EventLoopPromise<NodeID?>,
        timeout: TimeAmount,
        firstByte: TimeAmount?,
        counters: WireCounters?,
        check: PeerCheck? = nil,
        allowsNoCertificate: Bool = false
    ) {
        self.promise = promise
        self.timeout = timeout
        self.check = check
        self.allowsNoCertificate = allowsNoCertificate
        self.firstByte = firstByte
        self.counters = counters
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let seconds = timeout.nanoseconds / 1_000_000_000
        var timers = [
            context.eventLoop.scheduleTask(in: timeout) {
                let (watcher, context) = bound.value
                watcher.fail(context, TransportError("TLS handshake not finished within \(seconds) s"))
            }
        ]
        if let firstByte, let counters {
            timers.append(
                context.eventLoop.scheduleTask(in: firstByte) {
                    let (watcher, context) = bound.value
                    if counters.received == 0 { watcher.fail(context, TransportError("the peer sent nothing")) }
                }
            )
        }
        phase = .watching(timers: timers)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event, isWatching {
            do {
                let handler = try context.pipeline.syncOperations.handler(type: NIOSSLHandler.self)
                let id: NodeID?
                if let certificate = handler.peerCertificate {
                    id = try TLSIdentity.nodeID(of: certificate)
                } else if allowsNoCertificate {
                    id = nil
                } else {
                    throw TransportError("peer sent no certificate")
                }
                _ = settle()
                promise.succeed(id)
            } catch {
                fail(context, error)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard isWatching else { return context.fireErrorCaught(error) }
        let text = "\(error)"
        if let refused = check?.refused {
            fail(context, refused)
        } else if Self.peerRefusedOurs.contains(where: text.contains) {
            // The peer's alert is all this side learns: it did not take this node's certificate.
            fail(
                context,
                TransportError(
                    "wrong-cluster: the peer refused this node's certificate (it is a node of another cluster)",
                    refusal: .wrongCluster
                )
            )
        } else if text.contains("CERTIFICATE_VERIFY_FAILED") {
            fail(context, TransportError("TLS handshake failed: a certificate was refused"))
        } else {
            fail(context, TransportError("TLS handshake failed: \(TransportError.describing(error))"))
        }
    }

    /// The TLS alerts a peer sends when it refuses this node's certificate.
    static let peerRefusedOurs = ["ALERT_CERTIFICATE_UNKNOWN", "ALERT_UNKNOWN_CA", "ALERT_BAD_CERTIFICATE"]

    func channelInactive(context: ChannelHandlerContext) {
        if isWatching { fail(context, TransportError("connection closed during the TLS handshake")) }
        context.fireChannelInactive()
    }

    /// A channel that never connected (a refused attempt, or one that lost the Happy Eyeballs
    /// race) is unregistered without going inactive: its handshake slot is freed now, not when
    /// the handshake timer fires.
    func channelUnregistered(context: ChannelHandlerContext) {
        if isWatching { fail(context, TransportError("the connection closed before its TLS handshake")) }
        context.fireChannelUnregistered()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard settle() else { return }
        promise.fail(error)
        context.close(promise: nil)
    }
}
