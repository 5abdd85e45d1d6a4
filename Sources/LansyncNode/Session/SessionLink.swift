import LansyncCore

/// A session's peer as the node's bookkeeping sees it: who it is (proven by its certificate),
/// which side dialled, and how to end the session early. A connection gives one
/// (``Node/runSession(_:address:source:outsideView:over:)``), and so does a
/// session whose frames come from memory (``Node/session(inMemoryFrom:payloads:address:send:)``).
struct SessionLink: Sendable {
    let peerID: NodeID
    let outbound: Bool
    /// Ends the session: closes its connection (from memory: nothing to close).
    let close: @Sendable () -> Void
}
