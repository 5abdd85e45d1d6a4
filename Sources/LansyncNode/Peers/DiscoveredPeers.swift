import LansyncCore

/// The peers discovery currently advertises, at which addresses, and which of them have a dial
/// loop.
actor DiscoveredPeers {
    private var advertised: [NodeID: [PeerAddress]] = [:]
    private var lastKnown: [NodeID: [PeerAddress]] = [:]
    /// The address each peer was last reached at: dialled first next time (RFC 8305, 5.).
    private var worked: [NodeID: PeerAddress] = [:]
    private var dialing: Set<NodeID> = []

    /// What a sighting is to the node.
    enum Sighting: Equatable {
        /// A node not dialled yet: its dial loop starts.
        case new
        /// A node whose advert had gone: its dial loop (and session) went on meanwhile.
        case again
        /// An advertised node seen at other addresses (on another interface or family, or one
        /// more of its addresses).
        case readdressed
        /// Another sighting of an advertised node at the same addresses (a refresh).
        case known
    }

    /// Records a sighting: `addresses` are every address the node is known at now, in dialling
    /// order.
    func found(_ node: NodeID, at addresses: [PeerAddress]) -> Sighting {
        let before = advertised[node]
        advertised[node] = addresses
        lastKnown[node] = addresses
        if dialing.insert(node).inserted { return .new }
        guard let before else { return .again }
        return before == addresses ? .known : .readdressed
    }

    func lost(_ node: NodeID) { advertised.removeValue(forKey: node) }
    func isAdvertised(_ node: NodeID) -> Bool { advertised[node] != nil }

    /// Where to dial: the advertised addresses, else the last ones seen (until a connection
    /// fails); the one that worked last first.
    func addresses(of node: NodeID) -> [PeerAddress] {
        let all = advertised[node] ?? lastKnown[node] ?? []
        guard let worked = worked[node], all.contains(worked) else { return all }
        return [worked] + all.filter { $0 != worked }
    }

    /// `node` answered at `address`.
    func reached(_ node: NodeID, at address: PeerAddress) { worked[node] = address }

    func stoppedDialing(_ node: NodeID) { dialing.remove(node) }
    /// How many nodes have a dial loop.
    var dialingCount: Int { dialing.count }
    /// Forgets everything of `node` (a passed-on address whose dial loop ended).
    func forget(_ node: NodeID) {
        advertised[node] = nil
        lastKnown[node] = nil
        worked[node] = nil
        dialing.remove(node)
    }
}
