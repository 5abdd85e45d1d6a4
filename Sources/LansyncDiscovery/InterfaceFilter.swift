import Glibc

/// Which network interfaces a node takes mDNS adverts from (Docs/DISCOVERY.md, "Interfaces").
///
/// A machine with Docker, libvirt or a VPN sees adverts on its container and virtual bridges too
/// (Avahi resolves a service once per interface and family): a peer's address there is a
/// container's or a VM's, which the node would dial first and fail. By default those bridges are
/// ignored (``defaultIgnored``); `--interfaces` names the only ones to use instead, and
/// `--ignore-interface` adds to the ignored. Patterns are shell globs (`docker*`, `br-*`).
public struct InterfaceFilter: Sendable, Equatable {
    /// Container and virtual bridges, as Docker, Podman and libvirt name them.
    public static let defaultIgnored = ["docker*", "br-*", "veth*", "virbr*"]

    /// If not empty, the only interfaces used (the ignored ones then do not apply).
    public var only: [String]
    /// Interfaces never used, unless ``only`` names them.
    public var ignored: [String]

    public init(only: [String] = [], ignoring extra: [String] = []) {
        self.only = only
        self.ignored = Self.defaultIgnored + extra
    }

    /// True if adverts seen on interface `name` are used.
    public func allows(_ name: String) -> Bool {
        if !only.isEmpty { return only.contains { Self.matches($0, name) } }
        return !ignored.contains { Self.matches($0, name) }
    }

    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }
}
