import LansyncCore

/// The peers discovery currently advertises, and which of them have a dial loop.
actor DiscoveredPeers {
    private var advertised: [NodeID: PeerAddress] = [:]
    private var lastKnown: [NodeID: PeerAddress] = [:]
    private var dialing: Set<NodeID> = []

    /// Records a sighting; true if a dial loop should start.
    func found(_ node: NodeID, at address: PeerAddress) -> Bool {
        advertised[node] = address
        lastKnown[node] = address
        return dialing.insert(node).inserted
    }

    func lost(_ node: NodeID) { advertised.removeValue(forKey: node) }
    func isAdvertised(_ node: NodeID) -> Bool { advertised[node] != nil }
    /// Where to dial: the advertised address, else the last one seen (until a connection fails).
    func address(of node: NodeID) -> PeerAddress? { advertised[node] ?? lastKnown[node] }
    func stoppedDialing(_ node: NodeID) { dialing.remove(node) }
}
