public import LansyncCore
import LansyncReplica
public import LansyncWire

extension Node {
    /// One session with `peer` whose frames (payloads as the wire carries them, each decoded as a
    /// connection's would be) come from memory, through everything a session on a connection goes
    /// through but the socket and TLS: the hello judged, statements and reports taken in, the
    /// view, the registry, batches applied in transactions, progress recorded for `status`.
    /// What this node sends goes to `send`; when `payloads` ends, the peer counts as closed.
    ///
    /// For the fuzzer of the receive path (Tests/LansyncFuzzing, Fuzz/README.md), which also
    /// records real sessions between two nodes this way: nothing a member's frames can make a
    /// node do is out of its reach, and a trap here is a remote crash.
    public func session(
        inMemoryFrom peer: NodeID,
        payloads: AsyncStream<[UInt8]>,
        address: String = "memory",
        send: @escaping @Sendable (Message) async throws -> Void = { _ in }
    ) async -> SessionOutcome {
        if statements.revocation(of: peer) != nil { return SessionOutcome(error: ProtocolError(.revoked, "revoked")) }
        let link = SessionLink(peerID: peer, outbound: false) {}
        return await runSession(
            link,
            address: address,
            source: .inbound,
            outsideView: false
        ) { runner in await runner.run(payloads: payloads, send: send) }
    }

    /// Stops the node's threads for the store (its blocking pools) when it never ran
    /// (``run(ready:)`` stops them as it ends): a node made only for sessions from memory, as
    /// the fuzzer makes one after another, would otherwise keep them for the process's life.
    public func shutdownPools() async {
        await io.shutdown()
        await upkeep.shutdown()
    }
}
