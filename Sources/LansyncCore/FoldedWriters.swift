/// Retired writers folded out of the version vectors a replica tells others (Docs/MERGE.md,
/// "Retired writers fold").
///
/// Every restore, copy or repair gives a replica a fresh writer id, and the old one issues no
/// more dots; without folding, every vector that travels (hellos, summaries, the members'
/// reports) keeps an entry for each such writer for ever. A replica keeps a *folded set* `F`
/// (writer → counter, only ever raised) and tells a vector `V` as `V` without the entries `F`
/// covers, with `F` in its hello beside it; the receiver reads it back as `V ∪ F`. That is exact
/// because every entry of `F` is covered by the replica's own vector when taken (so `V ∪ F = V`),
/// and stable (every active member had seen it, so the reports a replica gossips about others
/// may be read back the same way).
///
/// The replica's own bookkeeping (its `node` table, each writer's counter, the version index)
/// keeps every writer: folding changes what travels and what is shown, never what is merged.
public enum WriterFolding {
    /// The entries a replica folds now, on its own authority: writers it knows are retired
    /// (`isRetired`: its own node's writers other than its current one, a revoked or forgotten
    /// member's) whose counter here the stable vector reaches, and that are not folded at that
    /// counter already. A writer thought retired that writes again (a copied directory still in
    /// use) is no harm: its later counters stay in the vector and fold in a later round.
    public static func folds(
        vector: VersionVector,
        stable: VersionVector,
        folded: VersionVector,
        isRetired: (NodeID) -> Bool
    ) -> VersionVector {
        var result = VersionVector()
        for (writer, counter) in vector.counters
        where counter > folded[writer] && stable[writer] >= counter && isRetired(writer) {
            result.raise(writer, to: counter)
        }
        return result
    }

    /// The entries of a peer's folded set this replica takes as its own: those its vector covers
    /// (a fold it has not caught up with yet waits for a later hello), beyond what it folded.
    public static func adoptable(
        _ peerFolded: VersionVector,
        vector: VersionVector,
        folded: VersionVector
    ) -> VersionVector {
        var result = VersionVector()
        for (writer, counter) in peerFolded.counters where counter > folded[writer] && vector[writer] >= counter {
            result.raise(writer, to: counter)
        }
        return result
    }
}

extension VersionVector {
    /// This vector as told with folded set `folded`: without the entries `folded` covers. A
    /// writer the vector holds more of than was folded keeps its entry.
    public func folded(by folded: VersionVector) -> VersionVector {
        guard !folded.isEmpty else { return self }
        return VersionVector(counters.filter { $0.value > folded[$0.key] })
    }

    /// A vector told with folded set `folded`, read back: the entries folded away restored.
    public func unfolded(with folded: VersionVector) -> VersionVector {
        joined(with: folded)
    }
}
