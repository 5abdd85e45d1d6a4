public import LansyncCore

/// The check of the signed runs a peer's batch carries against the batch's own versions
/// (Docs/SECURITY.md, "Signed writes"), made before any store sees the batch: a run holds if its
/// member's signature covers exactly the leaves of the batch's versions of it and the proof's
/// own, and the key it names is the writer's member's.
public struct RunCheck: Sendable {
    /// Checks a member's signature: `signature` over `bytes` made with `key`, and `key` the key of
    /// the member `writer` belongs to (its fingerprint starts with the writer id's first 64 bits).
    public typealias Verify =
        @Sendable (_ signature: [UInt8], _ bytes: [UInt8], _ key: [UInt8], _ writer: NodeID) -> Bool

    /// What the check found.
    public struct Outcome: Sendable, Equatable {
        /// The proofs that held: the batch keeps them, and the replica with its versions.
        public var held: [RunProof] = []
        /// The batch's field versions that a proof that held covers.
        public var signed = 0
        /// The batch's field versions no proof covers: written unsigned (a replica before
        /// protocol 1.14, or one whose key could not sign), or sent by a peer before 1.14.
        public var unsigned = 0
        /// The proofs that did not hold, each with why.
        public var failed: [Failure] = []

        public init() {}
    }

    /// A proof that did not hold.
    public struct Failure: Sendable, Equatable, CustomStringConvertible {
        public let run: SignedRun
        public let why: String

        public var description: String { "run \(run.writer.short):\(run.first)-\(run.last): \(why)" }
    }

    public let cluster: NodeID
    public let verify: Verify

    public init(cluster: NodeID, verify: @escaping Verify) {
        self.cluster = cluster
        self.verify = verify
    }

    /// Checks `batch`'s proofs against its versions.
    public func check(_ batch: DeltaBatch) -> Outcome {
        var outcome = Outcome()
        var proofs: [NodeID: [(proof: RunProof, leaves: [RunLeaf])]] = [:]
        for proof in batch.proofs {
            if let why = Self.malformation(of: proof, among: proofs[proof.run.writer] ?? []) {
                outcome.failed.append(Failure(run: proof.run, why: why))
            } else {
                proofs[proof.run.writer, default: []].append((proof, []))
            }
        }
        // Each version's leaf goes to the proof of its run; one without is unsigned.
        var buffer = ByteWriter()
        for update in batch.updates {
            for version in update.change.versions {
                guard
                    let index = proofs[version.dot.node]?.firstIndex(where: {
                        $0.proof.run.contains(version.dot.counter)
                    })
                else {
                    outcome.unsigned += 1
                    continue
                }
                proofs[version.dot.node]?[index].leaves.append(
                    RunLeaf(item: update.key.item, field: update.key.field, version: version, buffer: &buffer)
                )
            }
        }
        for (_, runs) in proofs.sorted(by: { $0.key < $1.key }) {
            for (proof, leaves) in runs {
                if let why = failure(of: proof, batchLeaves: leaves) {
                    outcome.failed.append(Failure(run: proof.run, why: why))
                    outcome.unsigned += leaves.count
                } else {
                    outcome.held.append(
                        RunProof(run: proof.run, leaves: proof.leaves, total: leaves.count + proof.leaves.count)
                    )
                    outcome.signed += leaves.count
                }
            }
        }
        return outcome
    }

    /// Why `proof` cannot hold whatever the batch holds: a run or leaves out of bounds, or a run
    /// of its writer that overlaps another of the batch's.
    static func malformation(of proof: RunProof, among others: [(proof: RunProof, leaves: [RunLeaf])]) -> String? {
        let run = proof.run
        guard run.isWellFormed else { return "not a run a member signs (its range, key or signature)" }
        guard proof.leaves.count <= SignedRun.maxLeaves, proof.leaves.allSatisfy({ run.contains($0.counter) }) else {
            return "leaves outside the run"
        }
        guard !others.contains(where: { $0.proof.run.first <= run.last && run.first <= $0.proof.run.last }) else {
            return "overlaps another run of the batch"
        }
        return nil
    }

    /// Why `proof` does not hold with the batch's leaves of it, or nil if it holds.
    func failure(of proof: RunProof, batchLeaves: [RunLeaf]) -> String? {
        let run = proof.run
        guard batchLeaves.count + proof.leaves.count <= SignedRun.maxLeaves else { return "more leaves than a run has" }
        let leaves = RunLeaf.canonical(batchLeaves + proof.leaves)
        // In order: a leaf twice is next to itself, and every dot of the run has a leaf if the
        // counters step by one from the first to the last.
        var expected = run.first
        for (index, leaf) in leaves.enumerated() {
            if index > 0, RunLeaf.samePlace(leaves[index - 1], leaf) {
                return "a leaf twice (\(leaf.counter), \(leaf.field))"
            }
            if leaf.counter == expected {
                expected &+= 1
            } else if index == 0 || leaf.counter != leaves[index - 1].counter {
                return "a dot of the run has no leaf"
            }
        }
        guard expected == run.last &+ 1 else { return "a dot of the run has no leaf" }
        let bytes = run.signedBytes(cluster: cluster, root: SignedRun.root(ofCanonical: leaves))
        guard verify(run.signature, bytes, run.key, run.writer) else {
            return "the signature does not hold for these writes, or the key is not the writer's member's"
        }
        return nil
    }
}
