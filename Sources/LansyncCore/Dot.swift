/// The unique name of one write: the node that made it and that node's counter at the time.
///
/// A node's counter only grows and is never reused (storage guarantees this across crashes), so a
/// dot names exactly one write in the whole cluster, and whatever a write carries is immutable:
/// two replicas holding the same dot hold the same data for it. That is what makes applying a
/// change twice harmless.
public struct Dot: Hashable, Comparable, Sendable {
    public let node: NodeID
    public let counter: UInt64

    public init(node: NodeID, counter: UInt64) {
        self.node = node
        self.counter = counter
    }

    public static func < (lhs: Dot, rhs: Dot) -> Bool {
        lhs.node != rhs.node ? lhs.node < rhs.node : lhs.counter < rhs.counter
    }
}

extension Dot: CustomStringConvertible {
    public var description: String { "\(node.short):\(counter)" }
}
