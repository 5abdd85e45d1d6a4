public import LansyncCore

/// The check of the signed runs a peer's batch carries against the batch's own versions
/// (Docs/SECURITY.md, "Signed writes"), made before any store sees the batch: a run holds if its
/// member's signature covers exactly the leaves of the batch's versions of it and the proof's
/// own, the key it names is the writer's member's, and the cluster's authority certified that key.
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

    /// Whether `key` is a member's of this cluster: `certificate` (DER, the one the batch carries
    /// for it, if any) was issued for it by the cluster's authority, or one was before.
    public typealias Certify = @Sendable (_ key: [UInt8], _ certificate: [UInt8]?) -> Bool

    public let cluster: NodeID
    public let verify: Verify
    public let certify: Certify

    public init(cluster: NodeID, verify: @escaping Verify, certify: @escaping Certify) {
        self.cluster = cluster
        self.verify = verify
        self.certify = certify
    }

    /// Checks `batch`'s proofs against its versions.
    public func check(_ batch: DeltaBatch) -> Outcome {
        var outcome = Outcome()
        var proofs: [NodeID: [(proof: RunProof, leaves: [RunLeaf])]] = [:]
        let certified = certifiedKeys(of: batch.proofs)
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
        // The first proof kept of each key carries its certificate, for the replica to keep and
        // pass on with the run.
        var keptCertificates: Set<[UInt8]> = []
        for (_, runs) in proofs.sorted(by: { $0.key < $1.key }) {
            for (proof, leaves) in runs {
                guard let certificate = certified[proof.run.key] else {
                    outcome.failed.append(
                        Failure(run: proof.run, why: "its key has no certificate from the cluster's authority")
                    )
                    outcome.unsigned += leaves.count
                    continue
                }
                if let why = failure(of: proof, batchLeaves: leaves) {
                    outcome.failed.append(Failure(run: proof.run, why: why))
                    outcome.unsigned += leaves.count
                } else {
                    let first = keptCertificates.insert(proof.run.key).inserted
                    outcome.held.append(
                        RunProof(
                            run: proof.run,
                            leaves: proof.leaves,
                            total: leaves.count + proof.leaves.count,
                            certificate: first ? certificate : nil
                        )
                    )
                    outcome.signed += leaves.count
                }
            }
        }
        return outcome
    }

    /// The keys of `proofs` the cluster's authority certified, each with the certificate the
    /// batch carries for it (nil: certified by one checked before, and the batch has none):
    /// each key is asked about once, with the first certificate the batch carries for it.
    func certifiedKeys(of proofs: [RunProof]) -> [[UInt8]: [UInt8]?] {
        var carried: [[UInt8]: [UInt8]] = [:]
        for proof in proofs {
            if let certificate = proof.certificate, carried[proof.run.key] == nil {
                carried[proof.run.key] = certificate
            }
        }
        var certified: [[UInt8]: [UInt8]?] = [:]
        for key in Set(proofs.map(\.run.key)) where certify(key, carried[key]) {
            certified[key] = .some(carried[key])
        }
        return certified
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
