public import LansyncCore
import LansyncIdentity
public import LansyncWire
import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// The joining machine's side of an invite (Docs/PROTOCOL.md, "Joining"): it dials the inviter
/// without a certificate of its own, accepts the inviter only if its certificate was issued by an
/// authority whose id the invite pins, sends one ``JoinRequest`` and returns the answer.
///
/// What it guarantees: the request (which proves knowledge of the invite's secret without
/// containing it) is only ever sent, encrypted, to a member of the pinned cluster.
public enum JoinDialer {
    /// Sends `request` to the inviter at `host:port` and returns its answer:
    /// ``Message/joinAccepted(_:)`` or ``Message/error(_:)``.
    /// - Parameter pins: true for the cluster id the invite names.
    public static func request(
        _ request: JoinRequest,
        host: String,
        port: Int,
        pins: @escaping @Sendable (NodeID) -> Bool,
        group: any EventLoopGroup,
        timeout: TimeAmount = .seconds(10)
    ) async throws(TransportError) -> Message {
        let refusal = NIOLockedValueBox<String?>(nil)
        let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        do {
            let channel = try await connect(
                host: host,
                port: port,
                pins: pins,
                refusal: refusal,
                group: group,
                timeout: timeout
            )
            // However the inviter behaves, the exchange ends within the timeout.
            let deadline = channel.channel.eventLoop.scheduleTask(in: timeout) { channel.channel.close(promise: nil) }
            defer { deadline.cancel() }
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(.joinRequest(request))
                for try await incoming in inbound {
                    switch incoming {
                    case .message(let message): return message
                    case .invalid(let error): throw TransportError("the inviter sent something unreadable (\(error))")
                    }
                }
                throw TransportError(
                    "the inviter at \(shown) closed the connection without an answer (within \(timeout.nanoseconds / 1_000_000_000) s)"
                )
            }
        } catch {
            if let why = refusal.withLockedValue({ $0 }) {
                throw TransportError("the machine at \(shown) \(why): check the address, or ask for a new code")
            }
            throw TransportError(connecting: error, timeout: timeout)
        }
    }

    /// A TLS connection to the inviter, without a client certificate, whose chain the invite
    /// pins (a refused chain leaves why in `refusal`), framed for messages.
    private static func connect(
        host: String,
        port: Int,
        pins: @escaping @Sendable (NodeID) -> Bool,
        refusal: NIOLockedValueBox<String?>,
        group: any EventLoopGroup,
        timeout: TimeAmount
    ) async throws -> NIOAsyncChannel<Incoming, Message> {
        var config = TLSConfiguration.makeClientConfiguration()
        config.certificateVerification = .noHostnameVerification
        config.minimumTLSVersion = .tlsv13
        let context = try NIOSSLContext(configuration: config)
        let future = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: NodeID?.self)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        try NIOSSLClientHandler(context: context, serverHostname: nil) { chain, verdict in
                            if let why = Self.check(chain, pins: pins) {
                                refusal.withLockedValue { $0 = why }
                                verdict.succeed(.failed)
                            } else {
                                verdict.succeed(.certificateVerified)
                            }
                        }
                    )
                    try sync.addHandler(
                        HandshakeWatcher(promise: promise, timeout: timeout, firstByte: nil, counters: nil)
                    )
                    return promise.futureResult.flatMapThrowing { _ in
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(ByteToMessageHandler(FrameDecoder()))
                        try sync.addHandler(MessageToByteHandler(FrameEncoder()))
                        return try NIOAsyncChannel<Incoming, Message>(wrappingChannelSynchronously: channel)
                    }
                }
            }
        return try await future.get()
    }

    /// Why the inviter's certificate chain is not acceptable, or nil if it is: the leaf must be
    /// issued by an authority in the chain whose id the invite pins.
    static func check(_ chain: [NIOSSLCertificate], pins: (NodeID) -> Bool) -> String? {
        let parsed = chain.compactMap { try? Certificate(derEncoded: try $0.toDERBytes()) }
        guard parsed.count == chain.count, let leaf = parsed.first else {
            return "sent a certificate lansync cannot read"
        }
        for candidate in parsed.dropFirst() {
            guard let authority = try? ClusterCertificate(verifying: candidate) else { continue }
            guard pins(authority.clusterID) else { return "belongs to another cluster than the one the invite is for" }
            return authority.issued(leaf) ? nil : "sent a certificate its cluster's authority did not issue"
        }
        return "is not a lansync node of the cluster the invite is for"
    }
}
