/// A version vector: for each node, the highest counter of its writes that have been seen.
///
/// Used at two levels: each field keeps one (every write to that field it has seen), and each
/// replica keeps one (what it has received from each origin node, used to find deltas). Entries
/// with counter 0 are never stored, so equal knowledge always has equal representation.
///
/// A vector keeps a digest of its entries up to date as they change, so that two unequal
/// vectors are told apart, and a vector is hashed, without a pass over every entry: a relay's
/// vectors hold every writer of the cluster, and its sessions compare them at every step.
public struct VersionVector: Hashable, Sendable {
    public private(set) var counters: [NodeID: UInt64]
    /// The wrapping sum of ``mix(_:_:)`` over the entries: equal vectors have equal digests.
    private var digest: UInt64

    public init() {
        counters = [:]
        digest = 0
    }

    public init(_ counters: [NodeID: UInt64]) {
        self.counters = counters.filter { $0.value > 0 }
        digest = self.counters.reduce(0) { $0 &+ Self.mix($1.key, $1.value) }
    }

    /// Equal digests first: a difference anywhere almost always shows there, and only vectors
    /// that agree on it are compared entry by entry.
    public static func == (lhs: VersionVector, rhs: VersionVector) -> Bool {
        lhs.digest == rhs.digest && lhs.counters == rhs.counters
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
        hasher.combine(counters.count)
    }

    /// One entry's share of the digest (a 64-bit finalizer of the id and counter: any change of
    /// either moves about half the bits). Not a secret: a digest only ever decides that vectors
    /// differ, never that they are equal.
    private static func mix(_ node: NodeID, _ counter: UInt64) -> UInt64 {
        var x = node.high ^ (node.low &* 0x9E37_79B9_7F4A_7C15) ^ (counter &* 0xC2B2_AE3D_27D4_EB4F)
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    public subscript(node: NodeID) -> UInt64 {
        counters[node] ?? 0
    }

    public var isEmpty: Bool { counters.isEmpty }

    /// The nodes with a non-zero entry, in id order.
    public var nodes: [NodeID] { counters.keys.sorted() }

    /// True if the write named by `dot` is covered (seen) by this vector.
    public func contains(_ dot: Dot) -> Bool {
        dot.counter <= self[dot.node]
    }

    /// Records a write as seen; never lowers an entry.
    public mutating func insert(_ dot: Dot) {
        raise(dot.node, to: dot.counter)
    }

    /// Raises one entry to at least `counter`.
    public mutating func raise(_ node: NodeID, to counter: UInt64) {
        let old = self[node]
        guard counter > old else { return }
        counters[node] = counter
        digest = digest &+ Self.mix(node, counter) &- (old == 0 ? 0 : Self.mix(node, old))
    }

    /// The entry-wise maximum: what is known after learning everything both vectors know.
    public func joined(with other: VersionVector) -> VersionVector {
        var result = self
        result.join(other)
        return result
    }

    public mutating func join(_ other: VersionVector) {
        for (node, counter) in other.counters { raise(node, to: counter) }
    }

    /// True if every entry of `other` is covered by this vector.
    public func covers(_ other: VersionVector) -> Bool {
        other.counters.allSatisfy { self[$0.key] >= $0.value }
    }

    /// How this vector relates to `other` in causal order.
    public func compare(to other: VersionVector) -> CausalOrder {
        let selfCovers = covers(other)
        let otherCovers = other.covers(self)
        switch (selfCovers, otherCovers) {
        case (true, true): return .equal
        case (true, false): return .dominates
        case (false, true): return .dominatedBy
        case (false, false): return .concurrent
        }
    }
}

/// The causal relation between two version vectors.
public enum CausalOrder: Sendable, Equatable {
    /// Both have seen exactly the same writes.
    case equal
    /// The left side has seen everything the right side has, and more.
    case dominates
    /// The right side has seen everything the left side has, and more.
    case dominatedBy
    /// Each has seen writes the other has not: they happened concurrently.
    case concurrent
}

extension VersionVector: CustomStringConvertible {
    public var description: String {
        "{" + nodes.map { "\($0.short):\(self[$0])" }.joined(separator: ", ") + "}"
    }
}
