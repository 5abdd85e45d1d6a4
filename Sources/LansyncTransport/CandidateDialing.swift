import NIOCore
import NIOPosix

/// The addresses a peer is known at, handed to SwiftNIO's Happy Eyeballs connector (RFC 8305) in
/// place of a DNS answer: the IPv6 ones as the AAAA answer, the IPv4 ones as the A answer, each
/// in the order given. NIO then dials the first IPv6 address, and every 250 ms with no connection
/// yet the next one, alternating families; the first TCP connection to complete wins and the rest
/// are closed.
///
/// With `ipv4First` (the address that worked last time is IPv4) the AAAA answer comes 75 ms late,
/// past NIO's 50 ms resolution delay, so the first attempt is the first IPv4 address.
struct CandidateResolver: Resolver, Sendable {
    let loop: any EventLoop
    let ipv4: [SocketAddress]
    let ipv6: [SocketAddress]
    let ipv4First: Bool

    /// Takes the candidates that are IP addresses (one whose link-local scope names an interface
    /// gone since is skipped); nil if none is.
    init?(loop: any EventLoop, candidates: [(host: String, port: Int)]) {
        var ipv4: [SocketAddress] = []
        var ipv6: [SocketAddress] = []
        var first: SocketAddress?
        for candidate in candidates {
            guard let address = try? SocketAddress(ipAddress: candidate.host, port: candidate.port) else { continue }
            first = first ?? address
            if case .v4 = address { ipv4.append(address) } else { ipv6.append(address) }
        }
        guard let first else { return nil }
        self.loop = loop
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        if case .v4 = first { ipv4First = true } else { ipv4First = false }
    }

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        loop.makeSucceededFuture(ipv4)
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        guard ipv4First, !ipv6.isEmpty else { return loop.makeSucceededFuture(ipv6) }
        let answer = ipv6
        return loop.scheduleTask(in: .milliseconds(75)) { answer }.futureResult
    }

    func cancelQueries() {}
}

extension SocketAddress {
    /// The IP address as people write it: an IPv4 peer of a dual-stack listener (`::ffff:10.0.0.2`)
    /// shows as `10.0.0.2`.
    var shownIP: String? {
        guard let ip = ipAddress else { return nil }
        if ip.hasPrefix("::ffff:"), ip.contains(".") { return String(ip.dropFirst(7)) }
        return ip
    }

    /// `ip:port`, or `[ip]:port` for IPv6.
    var shown: String {
        let ip = shownIP ?? "?"
        return ip.contains(":") ? "[\(ip)]:\(port ?? 0)" : "\(ip):\(port ?? 0)"
    }
}
