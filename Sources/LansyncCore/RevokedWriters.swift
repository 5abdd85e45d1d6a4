/// The writes that revocations and reader roles refuse: for each revoked node, and each node
/// that is or was a reader, the writes under its writer ids (``NodeID/isWriter(of:)``) beyond
/// the point its statements name, the counters of its writers that the signing machine held.
/// What it wrote up to that point stays; anything later is refused wherever it arrives
/// (Docs/SECURITY.md, "Revoking a machine" and "Roles").
///
/// Pure data: storage overrules the refused writes it receives or holds, and the node keeps this
/// set in step with the revocations it holds.
public struct RevokedWriters: Sendable, Equatable {
    /// The point one node's statements name.
    public struct Cut: Sendable, Equatable {
        public let node: NodeID
        /// The highest counter kept for each of the node's writers named.
        public let counters: [NodeID: UInt64]
        /// Whether a writer not named keeps all its writes (a node that was a reader and may
        /// write again, under a new writer) or none (a revoked node, a reader).
        public let keepsUnnamed: Bool
        /// Why, in words for history and `status` (the revocation's reason, who and when).
        public let reason: String

        public init(node: NodeID, counters: [NodeID: UInt64], keepsUnnamed: Bool = false, reason: String) {
            self.node = node
            self.counters = counters.filter { $0.key.isWriter(of: node) }
            self.keepsUnnamed = keepsUnnamed
            self.reason = reason
        }

        /// The highest counter of `writer` kept, or nil if all its writes are.
        func limit(of writer: NodeID) -> UInt64? {
            counters[writer] ?? (keepsUnnamed ? nil : 0)
        }
    }

    private var cuts: [UInt64: Cut] = [:]

    public init(_ cuts: [Cut] = []) {
        for cut in cuts { self.cuts[cut.node.high] = cut }
    }

    public var isEmpty: Bool { cuts.isEmpty }

    /// The cut that refuses `dot`, or nil if it stands.
    public func refusal(of dot: Dot) -> Cut? {
        guard let cut = cuts[dot.node.high], let limit = cut.limit(of: dot.node) else { return nil }
        return dot.counter > limit ? cut : nil
    }

    /// True if some revoked node may have written under `writer` beyond its cut (so a replica
    /// holding dots of it has something to check).
    public func names(_ writer: NodeID) -> Bool { cuts[writer.high]?.limit(of: writer) != nil }

    /// The refused dots a field state shows: its live versions and list elements written after
    /// their writer's cut.
    public func refusedDots(in state: FieldState) -> Set<Dot> {
        guard !cuts.isEmpty else { return [] }
        var dots = Set<Dot>()
        for version in state.versions where refusal(of: version.dot) != nil { dots.insert(version.dot) }
        for entry in state.entries where refusal(of: entry.dot) != nil { dots.insert(entry.dot) }
        return dots
    }
}
