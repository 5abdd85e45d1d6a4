import LansyncCore
import LansyncReplica
import LansyncWire

/// The running node's ``PeerView``, with the last addresses of the members in it: what the dial
/// loops ask before they dial, what an inbound session is accepted by, and what `status` shows
/// (Docs/SCALE.md).
///
/// While the cluster is small (``PeerView/isFullMesh``) it changes nothing: every loop dials and
/// every member is let in, as before the view existed. Past it, a discovered or passed-on member
/// is dialled only when the view chooses it (``fill()``), a configured one only while the active
/// view is short, and an inbound session only kept while the view has room or its peer is alone.
actor ViewKeeper {
    private var view: PeerView
    /// Where each member of the view was last seen (mDNS, a hello), and by which source,
    /// bounded with the view.
    private var addresses: [NodeID: (at: [PeerAddress], source: PeerSource)] = [:]
    private var rng = SystemRandomNumberGenerator()
    /// The session (its registry token) each active member's place rests on. A newer connection
    /// to the same member supersedes the older one (``PeerRegistry/claim``); the older one's end
    /// must not take the member out of the view while the newer one runs.
    private var counted: [NodeID: Int] = [:]
    /// About how many members the cluster has, merged from every hello (``MemberSketch``): kept
    /// apart from the view's own count, which decides the full mesh and must not move on an
    /// estimate.
    private(set) var sketch = MemberSketch()

    init(me: NodeID, limits: PeerView.Limits) {
        view = PeerView(me: me, limits: limits)
        sketch.insert(me)
    }

    var current: PeerView { view }
    var isFullMesh: Bool { view.isFullMesh }
    var activeCount: Int { view.active.count }
    /// Every member this node knows of, itself included (``PeerView/clusterSize``).
    var clusterSize: Int { view.clusterSize }

    /// `source` named `node` at `at` (mDNS, a member's hello).
    func learn(_ node: NodeID, at: [PeerAddress], source: PeerSource) {
        view.learn([node], using: &rng)
        if !at.isEmpty, view.active[node] != nil || view.passive[node] != nil { addresses[node] = (at, source) }
        forgetAddressesOutsideTheView()
    }

    /// A hello reported these members (beside its sender and this node).
    func heard(of reported: some Sequence<NodeID>, from sender: NodeID) {
        view.heard(ofMembers: Set(reported).union([sender, view.me]).count)
    }

    /// A hello's count of members (protocol 1.11) joins this node's; the larger of it and the
    /// members the view knows of: how many the cluster has at least, for the flood.
    func heard(sketch: MemberSketch?, from sender: NodeID) -> Int {
        if let sketch { self.sketch.merge(sketch) }
        self.sketch.insert(sender)
        return max(self.sketch.estimate, view.clusterSize)
    }

    /// Whether a discovered or passed-on member's loop may dial it now: in a full mesh always;
    /// else only a member the view chose (``fill()``).
    func mayDial(_ node: NodeID) -> Bool {
        view.isFullMesh || view.dialling.contains(node)
    }

    /// Whether a configured address may be dialled now: in a full mesh always; else while the
    /// active view is short of its target (a configured peer introduces; the view then chooses).
    func mayDialConfigured() -> Bool {
        view.isFullMesh || view.active.count < view.target
    }

    /// The members to dial so the active view reaches its target, with their addresses (none in
    /// a full mesh, where every loop dials anyway).
    func fill() -> [(NodeID, [PeerAddress], PeerSource)] {
        guard !view.isFullMesh else { return [] }
        return view.toDial(using: &rng).compactMap { node in
            guard let known = addresses[node], !known.at.isEmpty else {
                view.failed(node)
                return nil
            }
            return (node, known.at, known.source)
        }
    }

    func accepts(_ node: NodeID, alone: Bool) -> Bool { view.accepts(node, alone: alone) }

    /// Sessions past the view's bound, to close (a member let in because it was alone fills a
    /// full view for a moment; another session goes).
    func excess() -> [NodeID] { view.excess(using: &rng) }

    /// A session with `node` opened; `session`, its registry token, counts in the view from now.
    func opened(_ node: NodeID, dialled: Bool, alone: Bool, session: Int? = nil) {
        view.opened(node, dialled: dialled, alone: alone)
        if let session { counted[node] = session }
    }

    func closed(_ node: NodeID) {
        view.closed(node, using: &rng)
        forgetAddressesOutsideTheView()
    }

    func failed(_ node: NodeID) { view.failed(node) }

    /// A session with `node` ended: back to the passive view if it was the `session` that
    /// counted in the active one (not one a newer connection superseded); tried last if its full
    /// view `refused` this node's dial.
    func ended(_ node: NodeID, session: Int?, counted wasCounted: Bool, refused: Bool) {
        if wasCounted, counted[node] == session {
            counted[node] = nil
            closed(node)
        }
        if refused { view.failed(node) }
    }

    /// What `status` shows of the view.
    func status() -> NodeStatus.View {
        NodeStatus.View(
            mode: view.isFullMesh ? "full mesh" : "bounded",
            target: view.target,
            active: view.active.sorted { $0.key < $1.key }.map {
                .init(nodeID: $0.key.text, reason: $0.value.rawValue)
            },
            passive: view.passive.count
        )
    }

    /// A member outside the active view for a round of anti-entropy, with its addresses; none in
    /// a full mesh (every member has a session already).
    func antiEntropyPartner() -> (NodeID, [PeerAddress], PeerSource)? {
        guard !view.isFullMesh, let node = view.antiEntropyPartner(using: &rng), let known = addresses[node] else {
            return nil
        }
        return (node, known.at, known.source)
    }

    /// A dial of the view's ended without a session being counted (it failed before a hello):
    /// the member is no longer being dialled, and is tried last.
    func finishedDial(_ node: NodeID) {
        if view.dialling.contains(node) { view.failed(node) }
    }

    private func forgetAddressesOutsideTheView() {
        guard addresses.count > view.active.count + view.passive.count else { return }
        addresses = addresses.filter { view.active[$0.key] != nil || view.passive[$0.key] != nil }
    }
}
