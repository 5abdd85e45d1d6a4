import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import LansyncTransport

/// The answers SwiftNIO's Happy Eyeballs connector gets in place of DNS when a peer has several
/// addresses (Docs/DISCOVERY.md, "Both families, every address").
@Suite struct CandidateResolverTests {
    /// The addresses a future answered with, or nil while it is pending.
    func answer(_ future: EventLoopFuture<[SocketAddress]>) -> [String]? {
        let box = NIOLockedValueBox<[String]?>(nil)
        future.whenSuccess { list in box.withLockedValue { $0 = list.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } }
        }
        return box.withLockedValue { $0 }
    }

    @Test func eachFamilyIsAnsweredInTheOrderGiven() throws {
        let loop = EmbeddedEventLoop()
        let resolver = try #require(
            CandidateResolver(
                loop: loop,
                candidates: [("fd00::1", 7420), ("10.0.0.1", 7420), ("fe80::1%lo", 7420), ("10.0.0.2", 7421)]
            )
        )
        #expect(!resolver.ipv4First)
        #expect(answer(resolver.initiateAAAAQuery(host: "peer", port: 0)) == ["fd00::1:7420", "fe80::1:7420"])
        #expect(answer(resolver.initiateAQuery(host: "peer", port: 0)) == ["10.0.0.1:7420", "10.0.0.2:7421"])
        // The scope survives: the link-local candidate is dialled through its interface.
        let linkLocal = try #require(resolver.ipv6.last)
        #expect(linkLocal != (try SocketAddress(ipAddress: "fe80::1", port: 7420)))
        #expect(linkLocal == (try SocketAddress(ipAddress: "fe80::1%lo", port: 7420)))
    }

    /// An IPv4 address that answered last time comes first: the AAAA answer is held back past
    /// NIO's 50 ms resolution delay, so the connector starts with the A answer.
    @Test func anIPv4AddressFirstHoldsTheIPv6OnesBack() throws {
        let loop = EmbeddedEventLoop()
        let resolver = try #require(CandidateResolver(loop: loop, candidates: [("10.0.0.1", 7420), ("fd00::1", 7420)]))
        #expect(resolver.ipv4First)
        let held = resolver.initiateAAAAQuery(host: "peer", port: 0)
        #expect(answer(resolver.initiateAQuery(host: "peer", port: 0)) == ["10.0.0.1:7420"])
        loop.advanceTime(by: .milliseconds(74))
        #expect(answer(held) == nil)
        loop.advanceTime(by: .milliseconds(1))
        #expect(answer(held) == ["fd00::1:7420"])
    }

    @Test func aCandidateThatIsNoAddressIsSkippedAndNoneLeftIsNoResolver() {
        let loop = EmbeddedEventLoop()
        let resolver = CandidateResolver(loop: loop, candidates: [("peer.example", 7420), ("10.0.0.1", 7420)])
        #expect(
            resolver?.ipv4 == [try! SocketAddress(ipAddress: "10.0.0.1", port: 7420)] && resolver?.ipv6.isEmpty == true
        )
        #expect(CandidateResolver(loop: loop, candidates: [("peer.example", 7420)]) == nil)
        #expect(CandidateResolver(loop: loop, candidates: []) == nil)
    }
}
