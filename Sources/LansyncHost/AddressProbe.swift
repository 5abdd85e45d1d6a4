import Foundation

/// What one TCP connection attempt to a peer's address found: the first step `lansync doctor`
/// takes for every address it knows, before any TLS (the node's own sessions say what went
/// wrong after that).
public enum ProbeResult: Sendable, Equatable {
    /// Something accepted the connection.
    case open
    /// The machine answered that nothing listens on that port.
    case refused
    /// No answer within the time allowed: a firewall dropping the port, or a machine that is off.
    case timedOut
    /// The network says there is no way there (`EHOSTUNREACH`, `ENETUNREACH`), in its words.
    case noRoute(String)
    /// The host name does not resolve, or the address cannot be read.
    case unresolved(String)
    /// Anything else the system said.
    case failed(String)
}

/// One blocking connection attempt with a deadline (POSIX: a non-blocking `connect`, then
/// `poll`). No data is sent: the connection is closed as soon as it opens.
public enum AddressProbe {
    /// Tries `address` (`HOST:PORT`, `[IPV6]:PORT`) for at most `timeout`.
    public static func probe(_ address: String, timeout: Duration = .seconds(2)) -> ProbeResult {
        guard let (host, port) = split(address) else {
            return .unresolved("'\(address)' is not HOST:PORT")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .unresolved("\(host) does not resolve (\(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failed(String(cString: strerror(errno))) }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        if connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return .open }
        guard errno == EINPROGRESS else { return result(of: errno) }
        var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        )
        let ready = poll(&waiting, 1, milliseconds)
        guard ready > 0 else { return ready == 0 ? .timedOut : .failed(String(cString: strerror(errno))) }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else {
            return .failed(String(cString: strerror(errno)))
        }
        return error == 0 ? .open : result(of: error)
    }

    static func result(of code: Int32) -> ProbeResult {
        switch code {
        case ECONNREFUSED: .refused
        case ETIMEDOUT: .timedOut
        case EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL: .noRoute(String(cString: strerror(code)))
        default: .failed(String(cString: strerror(code)))
        }
    }

    /// `HOST:PORT` or `[IPV6]:PORT` into its parts.
    static func split(_ address: String) -> (host: String, port: Int)? {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            let host = String(address[address.index(after: address.startIndex)..<close])
            let rest = address[address.index(after: close)...]
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return (host, port)
        }
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (1...65535).contains(port), colon != address.startIndex
        else { return nil }
        return (String(address[..<colon]), port)
    }
}
