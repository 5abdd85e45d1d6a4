/// Where a node's mDNS discovery stands, as `status` shows it (`mdns`) and `doctor` judges it.
/// Its text form is what the status JSON carries, unchanged from when the state was a string.
public enum DiscoveryState: Sendable, Equatable, CustomStringConvertible {
    /// The node has not yet heard from the Avahi daemon.
    case starting
    /// Advertising and browsing through avahi-daemon.
    case running
    /// The daemon cannot be used, and why (the node retries).
    case unavailable(String)
    /// The node runs with `--no-mdns`: it neither advertises nor browses.
    case off

    public var description: String {
        switch self {
        case .starting: "starting"
        case .running: "running"
        case .unavailable(let why): "unavailable: \(why)"
        case .off: "off (--no-mdns)"
        }
    }

    /// Reads the text form (a node's status JSON); a text no release wrote reads as
    /// unavailable, with the text as its reason.
    public init(text: String) {
        switch text {
        case "starting": self = .starting
        case "running": self = .running
        case "off (--no-mdns)", "off": self = .off
        default:
            let prefix = "unavailable: "
            self = .unavailable(text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text)
        }
    }
}
