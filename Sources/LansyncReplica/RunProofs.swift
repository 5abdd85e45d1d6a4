public import LansyncCore

/// The proofs a batch carries of the signed runs whose versions it holds (Docs/SECURITY.md,
/// "Signed writes"), written once for every store over its ``DeltaReads``.
///
/// A receiver rebuilds a run's root from the leaves of the batch's versions and the proof's
/// own: so the proof holds the leaves of the run's other live versions (read from the store,
/// rare: a delta sends a run whole, ``LansyncCore/DeltaPlanner``), and none of those the batch
/// holds.
public enum RunProofs {
    /// The proofs for the versions of `updates`: one for each held run that holds any of them,
    /// the first of each key with the key's certificate (`signer`'s own, or one kept).
    /// With `signer`, a proof that needs leaves the batch does not hold is checked against its
    /// run's signature for the signer's cluster before it is sent
    /// (``otherLeaves(of:besides:batch:reads:missing:cluster:)``).
    public static func build(
        for updates: [FieldUpdate],
        reads: any DeltaReads,
        signer: (any WriteSigner)? = nil
    ) throws -> [RunProof] {
        var proofs = try build(for: updates, reads: reads, cluster: signer?.cluster)
        var certified: Set<[UInt8]> = []
        for index in proofs.indices where certified.insert(proofs[index].run.key).inserted {
            let key = proofs[index].run.key
            let certificate = key == signer?.publicKey ? signer?.certificate : try reads.memberCertificate(of: key)
            proofs[index].certificate = certificate.flatMap { $0.isEmpty ? nil : $0 }
        }
        return proofs
    }

    /// The proofs for the versions of `updates`, without certificates.
    static func build(
        for updates: [FieldUpdate],
        reads: any DeltaReads,
        cluster: NodeID?
    ) throws -> [RunProof] {
        // What the batch holds of each writer: (counter, field) of each version, and its leaf.
        var held: [NodeID: [LeafKey: (item: ItemID, version: FieldVersion)]] = [:]
        for update in updates {
            for version in update.change.versions {
                held[version.dot.node, default: [:]][LeafKey(version.dot.counter, update.key.field)] = (
                    update.key.item, version
                )
            }
        }
        var proofs: [RunProof] = []
        for (writer, versions) in held.sorted(by: { $0.key < $1.key }) {
            let keys = Set(versions.keys)
            for (run, total) in try runs(of: writer, holding: Set(keys.map(\.counter)), reads: reads) {
                let inRun = versions.filter { run.contains($0.key.counter) }
                guard inRun.count <= total else { continue }
                let batch = inRun.map { RunLeaf(item: $0.value.item, field: $0.key.field, version: $0.value.version) }
                // A run this replica can no longer make whole (a version it dropped without
                // keeping its leaf) goes without its proof, and its versions travel unsigned
                // rather than with a proof that cannot hold.
                guard
                    let others = try otherLeaves(
                        of: run,
                        besides: keys,
                        batch: batch,
                        reads: reads,
                        missing: total - inRun.count,
                        cluster: cluster
                    )
                else { continue }
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

    /// The `missing` leaves of `run` other than `besides` (the batch's, `batch` of them in this
    /// run): those kept of the versions the replica no longer holds, and, when those are fewer,
    /// those of its live versions. Nil if they cannot make the run whole.
    ///
    /// The versions a replica holds in a run's range are not always its leaves: a run a member
    /// signed when it upgraded covers the versions it held then (``HeldWriteSigning``), and a
    /// replica that holds an older version of one of its dots, which the member had replaced,
    /// keeps that version's digest when it replaces it too. So with `cluster`, the leaves are
    /// checked against the run's signature, and when there are more than `missing` the subsets
    /// without the extra ones are tried (kept digests first, at most ``maxTrials``).
    static func otherLeaves(
        of run: SignedRun,
        besides keys: Set<LeafKey>,
        batch: [RunLeaf],
        reads: any DeltaReads,
        missing: Int,
        cluster: NodeID?
    ) throws -> [RunLeaf]? {
        guard missing > 0 else { return [] }
        var leaves: [LeafKey: RunLeaf] = [:]
        for leaf in try reads.goneLeaves(of: run.writer, in: run.first...run.last)
        where !keys.contains(LeafKey(leaf.counter, leaf.field)) {
            leaves[LeafKey(leaf.counter, leaf.field)] = leaf
        }
        let gone = leaves.values.sorted()
        if gone.count == missing, cluster.map({ run.holds(batch + gone, cluster: $0) }) ?? true { return gone }
        let others = try reads.indexedVersions(of: run.writer, in: run.first...run.last).filter {
            let key = LeafKey($0.counter, $0.key.field)
            return !keys.contains(key) && leaves[key] == nil
        }
        var live: [RunLeaf] = []
        if !others.isEmpty {
            for update in try reads.sizedFieldUpdates(others.map(\.key)).updates {
                for version in update.change.versions
                where version.dot.node == run.writer && run.contains(version.dot.counter) {
                    let key = LeafKey(version.dot.counter, update.key.field)
                    guard !keys.contains(key), leaves[key] == nil else { continue }
                    let leaf = RunLeaf(item: update.key.item, field: update.key.field, version: version)
                    leaves[key] = leaf
                    live.append(leaf)
                }
            }
        }
        let all = gone + live.sorted()
        guard all.count >= missing else { return nil }
        guard let cluster else { return all.count == missing ? all : nil }
        return subset(of: all, keeping: missing) { run.holds(batch + $0, cluster: cluster) }
    }

    /// At most this many subsets of a run's leaves are checked against its signature (each a
    /// digest of the leaves and an ECDSA check, about 0.1 ms): the extra leaves are the rare
    /// versions a member replaced before it signed its older writes.
    static let maxTrials = 64

    /// The first subset of `leaves` of `count` leaves that `holds`, dropping the first leaves
    /// first (the kept digests, which `leaves` starts with); nil if none of the first
    /// ``maxTrials`` does.
    static func subset(
        of leaves: [RunLeaf],
        keeping count: Int,
        holds: ([RunLeaf]) -> Bool
    ) -> [RunLeaf]? {
        let drop = leaves.count - count
        var trials = 0
        // Index sets to drop, in lexicographic order: the kept digests come first in `leaves`.
        var chosen = Array(0..<drop)
        while trials < maxTrials {
            trials += 1
            let dropped = Set(chosen)
            let kept = leaves.indices.filter { !dropped.contains($0) }.map { leaves[$0] }
            if holds(kept) { return kept }
            // The next combination: raise the rightmost index that can still rise.
            var i = drop - 1
            while i >= 0, chosen[i] == leaves.count - drop + i { i -= 1 }
            guard i >= 0 else { return nil }
            chosen[i] += 1
            for j in (i + 1)..<drop { chosen[j] = chosen[j - 1] + 1 }
        }
        return nil
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
