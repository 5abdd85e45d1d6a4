/// What a replica sends of one field to a peer known to have seen every write up to ``base``:
/// the part of the field's state the peer lacks, so a list edit costs its own size, not the list's.
///
/// A delta holds the sender's whole context and horizon (a few bytes per node), every live
/// version (in full if the base has not seen it, else by its dot alone), the list tags the base
/// has not seen, and the removals the base has not seen. Merging it (``FieldState/merge(_:)-(FieldDelta)``)
/// gives exactly what merging the sender's whole state would, for any receiver that has seen
/// every write to the field up to ``base``:
/// - a tag the receiver holds with a dot the base covers is kept unless a removal in the delta
///   names it (the sender's log holds every removal the base has not seen: that is what
///   ``FieldState/horizon`` guarantees, and why a delta needs `base` to cover it);
/// - any other tag or version follows the ordinary merge rule against the sender's context.
///
/// The receiver's side of the bargain is checked where the replica's version vector is known:
/// a batch of deltas is refused unless the receiver's vector covers its base.
public struct FieldDelta: Hashable, Sendable {
    /// What the receiver is known to have seen (a replica version vector).
    public let base: VersionVector
    public let context: VersionVector
    public let horizon: VersionVector
    /// The live versions the base has not seen.
    public let versions: [FieldVersion]
    /// The live versions the base has seen, by dot: the receiver holds them or has superseded them.
    public let keptVersions: [Dot]
    /// The list tags the base has not seen.
    public let entries: [ListEntry]
    /// The removals the base has not seen.
    public let removals: [ListRemoval]

    /// Rebuilds a delta read from the wire; nil if it is not one a replica could have sent (a dot
    /// outside the context, a part on the wrong side of the base, a horizon the base does not
    /// cover).
    public init?(
        base: VersionVector,
        context: VersionVector,
        horizon: VersionVector,
        versions: [FieldVersion],
        keptVersions: [Dot],
        entries: [ListEntry],
        removals: [ListRemoval]
    ) {
        let dots = versions.map(\.dot) + keptVersions
        guard Set(dots).count == dots.count, !dots.isEmpty,
            Set(entries.map(\.tag)).count == entries.count,
            dots.allSatisfy({ context.contains($0) }),
            versions.allSatisfy({ !base.contains($0.dot) }),
            keptVersions.allSatisfy({ base.contains($0) }),
            entries.allSatisfy({ context.contains($0.dot) && !base.contains($0.dot) }),
            removals.allSatisfy({ !base.contains($0.by) && !horizon.contains($0.by) }),
            FieldState.isValidLog(removals, context: context),
            context.covers(horizon), base.covers(horizon)
        else { return nil }
        // Only the nodes of the context matter, and only up to the context: a smaller base
        // costs fewer bytes and asks less of the receiver.
        self.base = VersionVector(
            Dictionary(uniqueKeysWithValues: context.nodes.map { ($0, min(base[$0], context[$0])) })
        )
        self.context = context
        self.horizon = horizon
        self.versions = versions.sorted { $0.dot < $1.dot }
        self.keptVersions = keptVersions.sorted()
        self.entries = entries.sorted(by: FieldState.entryOrder)
        self.removals = removals.sorted { $0.by < $1.by }
    }
}

extension FieldState {
    /// The delta for a receiver that has seen every write up to `base`; nil when the removal log
    /// cannot vouch for that receiver (it is behind ``horizon``): send the whole state instead.
    public func delta(since base: VersionVector) -> FieldDelta? {
        guard !isEmpty, base.covers(horizon) else { return nil }
        return FieldDelta(
            base: base,
            context: context,
            horizon: horizon,
            versions: versions.filter { !base.contains($0.dot) },
            keptVersions: versions.map(\.dot).filter { base.contains($0) },
            entries: entries.filter { !base.contains($0.dot) },
            removals: removals.filter { !base.contains($0.by) }
        )
    }

    /// True if a delta for `base` would leave out something: list tags the base has seen, so
    /// sending a delta is worth it. (A scalar field's delta is its whole state.)
    public func deltaSaves(since base: VersionVector) -> Bool {
        entries.contains { base.contains($0.dot) } || versions.contains { base.contains($0.dot) && $0.isLarge }
    }

    public func merged(with delta: FieldDelta) -> FieldState {
        var result = self
        result.merge(delta)
        return result
    }
}

extension FieldVersion {
    /// A version whose write carries a list's worth of values (a whole-list assignment): worth
    /// leaving out of a delta when the receiver holds it.
    var isLarge: Bool {
        if case .list(let change) = write { return change.added.count + change.removed.count > 4 }
        return false
    }
}
