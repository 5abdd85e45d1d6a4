package import LansyncCore

/// What a rejoin asks a backend about an item it holds before it empties the replica: each a
/// look-up in the backend's SQL. Which items this replica created out of the peer's sight, and
/// which would lose their delete, is decided once, here.
package protocol RejoinReading {
    /// `item`'s field `name` as the replica holds it (its row and state), and whether the item is
    /// deleted; nil if it holds no such field.
    func heldField(item: String, _ name: FieldName) throws -> (row: Int64, state: FieldState, deleted: Bool)?
    /// The writes in field row `row`'s history, by dot (nil for one whose writer id does not read).
    func historyDots(ofField row: Int64) throws -> [Dot?]
}

extension RejoinReading {
    /// True if `item`'s `_type` was only ever written by `writers` (current versions and the
    /// field's history) in writes `peer` lacks: this replica created the item out of the peer's
    /// sight, and the peer's snapshot cannot hold it.
    package func wasCreatedOutOfSight(item: String, by writers: Set<NodeID>, peer: VersionVector) throws -> Bool {
        guard let (row, state, _) = try heldField(item: item, .type), state.isOnly(writers: writers, unseenBy: peer)
        else { return false }
        return try historyDots(ofField: row).allSatisfy { dot in
            guard let dot else { return false }
            return writers.contains(dot.node) && !peer.contains(dot)
        }
    }

    /// True if `item` is held deleted here and its `_deleted` holds no write of `writers` that
    /// `peer` lacks: that field is then not kept aside, and re-issued into a snapshot without
    /// the item, its other writes would bring it back live, its delete lost (the peer lost it
    /// with the item: a relay put back from a copy). With such a write, the re-issued field
    /// carries the others' versions too, and the item comes back deleted.
    package func wouldLoseItsDelete(item: String, writers: Set<NodeID>, peer: VersionVector) throws -> Bool {
        guard let (_, state, deleted) = try heldField(item: item, .deleted), deleted else { return false }
        return state.dots(of: writers, unseenBy: peer).isEmpty
    }
}
