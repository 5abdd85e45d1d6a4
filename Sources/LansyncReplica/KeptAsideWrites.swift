package import LansyncCore

/// The writes a rejoin kept aside (of this replica's own writers, that the snapshot it rejoined
/// from lacks), re-issued once the snapshot is in: what is dropped, which dots are named anew,
/// and the re-issued field states, written once for every backend (issue 65: the SQLite store
/// and PostgreSQL each had a copy). The backend reads the pending rows, names the new dots
/// under its current writer, and merges ``reissued(renamed:)`` as a batch of its own.
package struct KeptAsideWrites {
    /// This replica's own write identities: its node id and every writer it started.
    package let own: Set<NodeID>
    /// What the replica holds of `own`'s writes: the snapshot's, and what it merged since.
    package let held: VersionVector
    package private(set) var kept: [(key: FieldKey, state: FieldState)] = []
    /// Items whose pending writes were dropped.
    package private(set) var dropped = Set<ItemID>()

    package init(own: Set<NodeID>, held: VersionVector) {
        self.own = own
        self.held = held
    }

    /// Takes one pending write: dropped where the snapshot holds its item deleted (`deleted`
    /// true), or does not hold it (`deleted` nil) unless this replica created it while away
    /// (`created`: the others collected it meanwhile); a member coming back never brings a
    /// deleted item back. `state` decodes the write, only when it is kept.
    package mutating func take(
        _ key: FieldKey,
        deleted: Bool?,
        created: Bool,
        state: () throws -> FieldState
    ) rethrows {
        if deleted ?? !created {
            dropped.insert(key.item)
            return
        }
        kept.append((key, try state()))
    }

    /// The dots to name anew, in order: the kept writes of `own` the replica lacks.
    package var dots: [Dot] {
        var dots = Set<Dot>()
        for (_, state) in kept { dots.formUnion(state.dots(of: own, unseenBy: held)) }
        return dots.sorted()
    }

    /// The kept field states, each of `own`'s unseen dots named as `renamed` says
    /// (``FieldState/reissued(by:unseenBy:renamed:)``: same values, same concurrency).
    package func reissued(renamed: [Dot: Dot]) throws -> [FieldUpdate] {
        try kept.map { key, state in
            guard let reissued = state.reissued(by: own, unseenBy: held, renamed: renamed) else {
                throw DecodingError("a write kept aside at rejoin has no new name", offset: 0)
            }
            return FieldUpdate(key: key, state: reissued)
        }
    }

    /// What the re-issue did, `writes` dots named anew.
    package func outcome(writes: Int) -> RejoinOutcome {
        RejoinOutcome(items: Set(kept.map(\.key.item)).count, writes: writes, dropped: dropped.count)
    }
}

extension BatchMerge {
    /// Re-issues `pending` under the replica's current writer: each of its ``KeptAsideWrites/dots``
    /// named anew, in order, and the re-issued states merged like a batch; what the rejoin
    /// comes to.
    package mutating func reissue(_ pending: KeptAsideWrites, in rows: inout Rows) throws -> RejoinOutcome {
        var renamed: [Dot: Dot] = [:]
        for dot in pending.dots { renamed[dot] = try nextDot(in: &rows) }
        _ = try merge(try pending.reissued(renamed: renamed), in: &rows)
        return pending.outcome(writes: renamed.count)
    }
}
