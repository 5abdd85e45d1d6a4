/// The multi-node tests' cluster on loopback: a relay on this CLI's directory `r`, and nodes
/// that keep a session with it (and with the peers they are given).
/// Directories come from ``CLI/cluster(_:)``.
extension CLI {
    /// `lansync relay` on directory `name` (`r` unless told), listening on `port`.
    func relay(
        port: Int,
        settle: String = "latest",
        name: String = "r",
        extra: [String] = []
    ) async throws -> NodeProcess {
        try await NodeProcess(
            dir: path(name),
            port: port,
            arguments: ["--listen", "127.0.0.1:\(port)", "--settle", settle] + extra,
            command: "relay"
        )
    }

    /// `lansync node` on directory `name`, listening on `port`, with the relay on `relay` and
    /// these peers.
    func node(_ name: String, port: Int, relay: Int, peers: [Int] = []) async throws -> NodeProcess {
        try await node(name, port: port, relays: [relay], peers: peers)
    }

    /// `lansync node` on directory `name`, listening on `port`, given these relays in this order
    /// (`--relay` once each) and these peers.
    func node(_ name: String, port: Int, relays: [Int], peers: [Int] = []) async throws -> NodeProcess {
        try await NodeProcess(
            dir: path(name),
            port: port,
            peers: peers,
            // A star: the nodes meet only the relay (on loopback they could reach each other at
            // the addresses the relay passes on).
            extra: relays.flatMap { ["--relay", "127.0.0.1:\($0)"] } + ["--no-gossip"]
        )
    }
}
