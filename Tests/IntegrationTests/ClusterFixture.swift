/// The multi-node tests' cluster on loopback: a relay on this CLI's directory `r`, and nodes
/// that hand their changes to it every second (and keep connected to the peers they are given).
/// Directories come from ``CLI/cluster(_:)``.
extension CLI {
    /// `lansync relay` on directory `r`, listening on `port`.
    func relay(port: Int, settle: String = "latest") throws -> NodeProcess {
        try NodeProcess(
            dir: path("r"),
            port: port,
            arguments: ["--listen", "127.0.0.1:\(port)", "--settle", settle],
            command: "relay"
        )
    }

    /// `lansync node` on directory `name`, listening on `port`, with the relay on `relay` and
    /// these peers.
    func node(_ name: String, port: Int, relay: Int, peers: [Int] = []) throws -> NodeProcess {
        try NodeProcess(
            dir: path(name),
            port: port,
            peers: peers,
            // A star: the nodes meet only the relay (on loopback they could reach each other at
            // the addresses the relay passes on).
            extra: ["--relay", "127.0.0.1:\(relay)", "--relay-interval", "1", "--no-gossip"]
        )
    }
}
