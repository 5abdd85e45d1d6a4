/// The order in which a peer's addresses are dialled (RFC 6724's spirit, RFC 8305's practice):
/// global and unique-local IPv6 first, then IPv4, then link-local IPv6 (which needs its
/// interface's scope, `fe80::1%eth0`), then IPv4 link-local (`169.254/16`).
public enum AddressPreference {
    /// The rank of `host` (an IP address, possibly scoped): lower is dialled first.
    public static func rank(_ host: String) -> Int {
        let lower = host.lowercased()
        if lower.contains(":") { return isLinkLocal(lower) ? 2 : 0 }
        return lower.hasPrefix("169.254.") ? 3 : 1
    }

    /// True for an IPv6 link-local address (`fe80::/10`) or any address with a scope: one that
    /// means something only on this machine's interface, and so is never passed on to others.
    public static func isLinkLocal(_ host: String) -> Bool {
        let lower = host.lowercased()
        guard lower.contains(":") else { return false }
        if lower.contains("%") { return true }
        return ["fe8", "fe9", "fea", "feb"].contains { lower.hasPrefix($0) }
    }

    /// `hosts` in dialling order, each once; the order among equals is kept.
    public static func ordered(_ hosts: [String]) -> [String] {
        var seen: Set<String> = []
        return hosts.filter { seen.insert($0).inserted }.enumerated()
            .sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }
            .map(\.element)
    }
}
