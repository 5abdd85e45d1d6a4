import Foundation
public import LansyncCore
public import LansyncIdentity
public import LansyncNode
import LansyncWire

/// A node under attack, in process: a real `Node` over a real SQLite replica, fed a member's
/// sessions from memory (``Node/session(inMemoryFrom:payloads:address:send:)``), then asked for
/// its `status` as `lansync status` and `/metrics` ask it. Everything a member's frames reach on
/// a node runs: the frame decoder, ``SessionMachine``, the node's judgement of the hello
/// (statements, reports, the member count, the view, the registry), the store's receive path in
/// its transactions, and the status report with its progress and time left (issue 62).
///
/// A trap anywhere is a crash of the process that runs this: what the fuzzer looks for.
public final class FuzzTarget: Sendable {
    /// The member whose sessions are played (its hello must name it, as its certificate would).
    public let peer: NodeID
    public let target: InProcessNode
    public var node: Node { target.node }

    /// A fresh node in `directory`, of the cluster `cluster`; `peer` is the member whose frames
    /// it will be fed.
    public init(directory: String, cluster: ClusterSecret, peer: NodeID) throws {
        self.peer = peer
        target = try InProcessNode(directory: directory, cluster: cluster, name: "target")
    }

    /// The frames of `input`: wire frames back to back (a 4-byte length, then the payload), as
    /// a member writes them on its connection; what follows a bad length or a cut frame is
    /// dropped, as a connection would be closed there.
    public static func frames(_ input: [UInt8]) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var at = 0
        while input.count - at >= 4 {
            guard let length = try? Frame.payloadLength(prefix: Array(input[at..<at + 4])),
                input.count - at - 4 >= length
            else { break }
            frames.append(Array(input[at + 4..<at + 4 + length]))
            at += 4 + length
        }
        return frames
    }

    /// Plays `input` as one session of ``peer``'s, then renders this node's status (its JSON
    /// as `status --json` prints it, every peer's progress line, the view's figures).
    /// Returns how the session ended, for the corpus to tell new behaviour.
    @discardableResult
    public func run(_ input: [UInt8]) async -> SessionOutcome {
        let (payloads, feed) = AsyncStream<[UInt8]>.makeStream()
        for frame in Self.frames(input) { feed.yield(frame) }
        feed.finish()
        let outcome = await node.session(inMemoryFrom: peer, payloads: payloads)
        if let status = try? await node.status() {
            _ = status.json
            for peer in status.peers { _ = peer.receiving?.summary }
            _ = status.view?.summary
        }
        return outcome
    }
}
