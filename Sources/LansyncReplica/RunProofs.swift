public import LansyncCore

/// The proofs a batch carries of the signed runs whose versions it holds (Docs/SECURITY.md,
/// "Signed writes"), written once for every store over its ``DeltaReads``.
///
/// A receiver rebuilds a run's root from the leaves of the batch's versions and the proof's
/// own: so the proof holds the leaves of the run's other live versions (read from the store,
/// rare: a delta sends a run whole, ``LansyncCore/DeltaPlanner``), and none of those the batch
/// holds.
public enum RunProofs {
    /// The proofs for the versions of `updates`: one for each held run that holds any of them.
    public static func build(for updates: [FieldUpdate], reads: any DeltaReads) throws -> [RunProof] {
        // What the batch holds of each writer: (counter, field) of each version.
        var held: [NodeID: Set<LeafKey>] = [:]
        for update in updates {
            for version in update.change.versions {
                held[version.dot.node, default: []].insert(LeafKey(version.dot.counter, update.key.field))
            }
        }
        var proofs: [RunProof] = []
        for (writer, keys) in held.sorted(by: { $0.key < $1.key }) {
            for (run, total) in try runs(of: writer, holding: Set(keys.map(\.counter)), reads: reads) {
                let held = keys.filter { run.contains($0.counter) }.count
                let others = try otherLeaves(of: run, besides: keys, reads: reads, missing: total - held)
                // A run this replica can no longer make whole (a version it dropped without
                // keeping its leaf: collection purges items whole) goes without its proof, and
                // its versions travel unsigned rather than with a proof that cannot hold.
                guard held + others.count == total else { continue }
                proofs.append(RunProof(run: run, leaves: others))
            }
        }
        return proofs
    }

    /// The held runs of `writer` that hold any of `counters`, each once: a look-up per run, from
    /// the lowest counter not yet in a run found (a batch's counters of one writer may lie far
    /// apart, a live edit beside one from long ago, and a range from the lowest to the highest
    /// would read every run between).
    static func runs(
        of writer: NodeID,
        holding counters: Set<UInt64>,
        reads: any DeltaReads
    ) throws -> [(run: SignedRun, leaves: Int)] {
        var found: [(run: SignedRun, leaves: Int)] = []
        for counter in counters.sorted() where !found.contains(where: { $0.run.contains(counter) }) {
            found += try reads.signedRuns(of: writer, overlapping: counter...counter)
        }
        return found
    }

    /// The leaves of `run` other than `besides`: those kept of the versions the replica no
    /// longer holds, and, when those are fewer than the `missing` leaves, those of its live
    /// versions (each once). A run the batch holds whole reads one short look-up.
    static func otherLeaves(
        of run: SignedRun,
        besides keys: Set<LeafKey>,
        reads: any DeltaReads,
        missing: Int
    ) throws -> [RunLeaf] {
        guard missing > 0 else { return [] }
        var leaves: [LeafKey: RunLeaf] = [:]
        for leaf in try reads.goneLeaves(of: run.writer, in: run.first...run.last)
        where !keys.contains(LeafKey(leaf.counter, leaf.field)) {
            leaves[LeafKey(leaf.counter, leaf.field)] = leaf
        }
        if leaves.count == missing { return leaves.values.sorted() }
        let others = try reads.indexedVersions(of: run.writer, in: run.first...run.last).filter {
            let key = LeafKey($0.counter, $0.key.field)
            return !keys.contains(key) && leaves[key] == nil
        }
        if !others.isEmpty {
            for update in try reads.sizedFieldUpdates(others.map(\.key)).updates {
                for version in update.change.versions
                where version.dot.node == run.writer && run.contains(version.dot.counter) {
                    let key = LeafKey(version.dot.counter, update.key.field)
                    guard !keys.contains(key) else { continue }
                    leaves[key] = RunLeaf(item: update.key.item, field: update.key.field, version: version)
                }
            }
        }
        return leaves.values.sorted()
    }

    /// A leaf's place in its run: its dot's counter and its field.
    struct LeafKey: Hashable {
        let counter: UInt64
        let field: FieldName
        init(_ counter: UInt64, _ field: FieldName) {
            self.counter = counter
            self.field = field
        }
    }
}

extension FieldState {
    /// Whether one of the state's live versions is `dot`'s (a handful at most: no set is built).
    func holds(_ dot: Dot) -> Bool { versions.contains { $0.dot == dot } }
}
