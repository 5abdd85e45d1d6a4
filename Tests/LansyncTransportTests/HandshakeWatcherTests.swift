import LansyncCore
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import LansyncTransport

/// The handshake watcher's timers and ends, with the embedded event loop's clock moved by hand:
/// a handshake that does not finish in time, a peer that sends nothing, a close under way.
@Suite struct HandshakeWatcherTests {
    struct Watched {
        let channel: EmbeddedChannel
        let loop: EmbeddedEventLoop
        let identity: EventLoopFuture<NodeID?>
        let counters: WireCounters
    }

    func watched(timeout: TimeAmount = .seconds(10), firstByte: TimeAmount? = .seconds(3)) throws -> Watched {
        let loop = EmbeddedEventLoop()
        let promise = loop.makePromise(of: NodeID?.self)
        let counters = WireCounters()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(
            HandshakeWatcher(promise: promise, timeout: timeout, firstByte: firstByte, counters: counters)
        )
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return Watched(channel: channel, loop: loop, identity: promise.futureResult, counters: counters)
    }

    /// The promise's failure, or nil while it is pending or if it succeeded.
    func failure(_ w: Watched) -> String? {
        // The embedded loop runs callbacks at once, on this thread.
        let text = NIOLockedValueBox<String?>(nil)
        w.identity.whenFailure { error in text.withLockedValue { $0 = "\(error)" } }
        return text.withLockedValue { $0 }
    }

    /// An attempt that never connected (refused, or closed because another candidate answered
    /// first) is unregistered without going inactive: it ends now, freeing its handshake slot,
    /// not when the handshake timer fires.
    @Test func aChannelThatNeverConnectedEndsAtOnce() throws {
        let loop = EmbeddedEventLoop()
        let promise = loop.makePromise(of: NodeID?.self)
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(
            HandshakeWatcher(promise: promise, timeout: .seconds(10), firstByte: nil, counters: WireCounters())
        )
        let w = Watched(channel: channel, loop: loop, identity: promise.futureResult, counters: WireCounters())
        #expect(failure(w) == nil)
        channel.pipeline.fireChannelUnregistered()
        #expect(failure(w) == "the connection closed before its TLS handshake")
    }

    @Test func aHandshakeThatDoesNotFinishInTimeIsClosed() throws {
        let w = try watched(timeout: .seconds(10), firstByte: nil)
        w.loop.advanceTime(by: .seconds(9))
        #expect(failure(w) == nil && w.channel.isActive, "closed before its time")
        w.loop.advanceTime(by: .seconds(1))
        #expect(failure(w) == "TLS handshake not finished within 10 s")
        #expect(!w.channel.isActive)
    }

    @Test func aPeerThatSendsNothingIsClosedAtTheFirstByteDeadline() throws {
        let w = try watched(timeout: .seconds(10), firstByte: .seconds(3))
        w.loop.advanceTime(by: .seconds(3))
        #expect(failure(w) == "the peer sent nothing")
        #expect(!w.channel.isActive)
    }

    @Test func aPeerThatSentSomethingOutlivesTheFirstByteDeadline() throws {
        let w = try watched(timeout: .seconds(10), firstByte: .seconds(3))
        w.counters.add(received: 1)
        w.loop.advanceTime(by: .seconds(5))
        #expect(failure(w) == nil && w.channel.isActive, "closed though it spoke")
        w.loop.advanceTime(by: .seconds(5))
        #expect(failure(w) == "TLS handshake not finished within 10 s", "the handshake's own deadline still holds")
    }

    @Test func aCloseDuringTheHandshakeSaysSo() throws {
        let w = try watched()
        w.channel.pipeline.fireChannelInactive()
        #expect(failure(w) == "connection closed during the TLS handshake")
        // Its timers are gone: nothing fires later.
        w.loop.advanceTime(by: .seconds(60))
        #expect(failure(w) == "connection closed during the TLS handshake")
    }

    /// A certificate a peer refused surfaces as the peer's refusal, in words people know.
    @Test func aPeerRefusingOurCertificateIsNamedSo() throws {
        let w = try watched()
        w.channel.pipeline.fireErrorCaught(TransportError("handshake failed: ALERT_UNKNOWN_CA"))
        #expect(
            failure(w)?.hasPrefix("wrong-cluster: the peer refused this node's certificate") == true,
            "\(failure(w) ?? "-")"
        )
    }
}
