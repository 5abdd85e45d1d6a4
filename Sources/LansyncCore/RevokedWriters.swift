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
    /// Whether writes must be signed, and past which point (``SignatureRequirement``).
    public let signatures: SignatureRequirement?
    /// The writes of the batch being merged that the requirement refuses: new to the replica,
    /// past the point, and with no signed run that held (``refuseUnproven(_:)``).
    private var unproven: Set<Dot> = []

    public init(_ cuts: [Cut] = [], signatures: SignatureRequirement? = nil) {
        for cut in cuts { self.cuts[cut.node.high] = cut }
        self.signatures = signatures
    }

    /// True if nothing is refused: no cut, and no unproven write among a batch's.
    public var isEmpty: Bool { cuts.isEmpty && unproven.isEmpty }

    /// Refuses `dots` as writes without their member's signature (a batch's, as the merge finds
    /// them: ``SignatureRequirement/needsProof(_:)``), for the rest of this merge.
    public mutating func refuseUnproven(_ dots: some Sequence<Dot>) {
        unproven.formUnion(dots)
    }

    /// The cut that refuses `dot`, or nil if it stands.
    public func refusal(of dot: Dot) -> Cut? {
        if !unproven.isEmpty, unproven.contains(dot), let signatures {
            return Cut(node: dot.node, counters: [:], reason: signatures.reason)
        }
        guard let cut = cuts[dot.node.high], let limit = cut.limit(of: dot.node) else { return nil }
        return dot.counter > limit ? cut : nil
    }

    /// True if some revoked node may have written under `writer` beyond its cut (so a replica
    /// holding dots of it has something to check).
    public func names(_ writer: NodeID) -> Bool { cuts[writer.high]?.limit(of: writer) != nil }

    /// The refused dots a field state shows: its live versions and list elements written after
    /// their writer's cut.
    public func refusedDots(in state: FieldState) -> Set<Dot> {
        guard !isEmpty else { return [] }
        var dots = Set<Dot>()
        for version in state.versions where refusal(of: version.dot) != nil { dots.insert(version.dot) }
        for entry in state.entries where refusal(of: entry.dot) != nil { dots.insert(entry.dot) }
        return dots
    }
}

/// Signed writes required (Docs/SECURITY.md, "Requiring signed writes"), as the cluster's
/// authority stated it: past a point, the counters of each writer the signing machine held, a
/// write counts only with a signed run of its member that holds (``RunCheck``). What the point
/// keeps was written before signatures were required (or by a replica from before protocol
/// 1.14) and stays, unverified.
///
/// Pure data: a merge refuses the new unproven writes past the point, as it refuses a revoked
/// node's (``RevokedWriters/refuseUnproven(_:)``).
public struct SignatureRequirement: Sendable, Equatable {
    /// The highest counter of each writer that stays without a signature; 0 for any other.
    public let cut: [NodeID: UInt64]
    /// Why, in words for history and `status`: since when, and who required it.
    public let reason: String

    public init(cut: [NodeID: UInt64], reason: String) {
        self.cut = cut
        self.reason = reason
    }

    /// True if `dot` counts only with its member's signature.
    public func needsProof(_ dot: Dot) -> Bool { dot.counter > cut[dot.node, default: 0] }

    /// The words every refusal's reason starts with (storage finds refusals by them).
    public static let reasonStart = "written unsigned"
}
