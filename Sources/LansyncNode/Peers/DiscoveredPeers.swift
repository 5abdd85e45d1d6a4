import LansyncCore

/// The peers discovery currently advertises, and which of them have a dial loop.
actor DiscoveredPeers {
    private var advertised: [NodeID: PeerAddress] = [:]
    private var lastKnown: [NodeID: PeerAddress] = [:]
    private var dialing: Set<NodeID> = []

    /// What a sighting is to the node.
    enum Sighting: Equatable {
        /// A node not dialled yet: its dial loop starts.
        case new
        /// A node whose advert had gone: its dial loop (and session) went on meanwhile.
        case again
        /// Another sighting of an advertised node (another interface or family, a refresh).
        case known
    }

    /// Records a sighting.
    func found(_ node: NodeID, at address: PeerAddress) -> Sighting {
        let wasAdvertised = advertised[node] != nil
        advertised[node] = address
        lastKnown[node] = address
        if dialing.insert(node).inserted { return .new }
        return wasAdvertised ? .known : .again
    }

    func lost(_ node: NodeID) { advertised.removeValue(forKey: node) }
    func isAdvertised(_ node: NodeID) -> Bool { advertised[node] != nil }
    /// Where to dial: the advertised address, else the last one seen (until a connection fails).
    func address(of node: NodeID) -> PeerAddress? { advertised[node] ?? lastKnown[node] }
    func stoppedDialing(_ node: NodeID) { dialing.remove(node) }
    /// How many nodes have a dial loop.
    var dialingCount: Int { dialing.count }
    /// Forgets everything of `node` (a passed-on address whose dial loop ended).
    func forget(_ node: NodeID) {
        advertised[node] = nil
        lastKnown[node] = nil
        dialing.remove(node)
    }
}
