import LansyncCore
import LansyncIdentity
import LansyncStore
import LansyncWire

// Members' reports of their own progress, signed (protocol 1.13; Docs/SECURITY.md, "What a
// member can and cannot do"): collection acts on how far every member has seen, so a report in
// a member's name counts second-hand only with that member's signature, and a claim that this
// replica was rolled back counts only as far as this replica's own signature vouches for it.
extension Hello.SignedReport {
    /// This node's report of itself: `seen` as of `at`, signed with its key; nil if signing failed.
    static func signed(
        by signer: MemberSigner,
        cluster: NodeID,
        at: UInt64,
        seen: VersionVector
    ) -> Hello.SignedReport? {
        let bytes = Self.signedBytes(cluster: cluster, nodeID: signer.nodeID, at: at, seen: seen)
        guard let signature = signer.sign(bytes) else { return nil }
        return Hello.SignedReport(
            nodeID: signer.nodeID,
            at: at,
            seen: seen,
            key: signer.publicKey,
            signature: signature
        )
    }

    /// True if the member the report names signed it, for this cluster.
    func isSigned(in cluster: NodeID) -> Bool {
        MemberSignature.isValid(signature, of: signedBytes(cluster: cluster), key: key, by: nodeID)
    }

    /// The report as a replica records it: the member's vector, at its time (a time ahead of
    /// this machine's is taken as now), the signed bytes kept to pass on.
    func recorded(now: UInt64) -> MemberReport {
        MemberReport(nodeID: nodeID, seen: seen, at: min(at, now), signed: encoded, signedAt: at)
    }

    /// How far ahead of this machine's clock a member's time may be and its report still count:
    /// the hybrid clock's own bound. A report further ahead would stay the newest for as long.
    static let maxAhead = HybridLogicalClock.maxForwardDrift
}

/// What a member's own signature vouches for of this replica's writers: how far the reports of
/// this node that a peer passed back go (``Hello/signedReports``). A peer that claims more of this
/// replica's writes than that proves no rollback (issue 64: 30 hellos each claiming one more
/// write took a replica from 1 writer to 31).
struct OwnWitness: Sendable, Equatable {
    let node: NodeID
    let writer: NodeID
    private(set) var vouched = VersionVector()

    init(node: NodeID, writer: NodeID) {
        self.node = node
        self.writer = writer
    }

    /// Takes in the reports of this node a hello carries that this node's key signed.
    mutating func learn(_ hello: Hello, cluster: NodeID) {
        for report in hello.signedReports where report.nodeID == node && report.isSigned(in: cluster) {
            vouched.join(report.seen)
        }
    }

    /// `claim` with what it says of this replica's own writers cut to what is vouched for: the
    /// rest of a peer's vector (or a batch's covers) is left as it is.
    ///
    /// - Parameter shown: what a batch's own field states name of those writers (their
    ///   contexts, joined): a batch that carries this replica's writes back proves them by the
    ///   writes themselves, and a replica that merged a state naming a write of its current
    ///   writer must retire it before it writes again, whoever made the state.
    func vouchedPart(of claim: VersionVector, shown: VersionVector = VersionVector()) -> VersionVector {
        var cut = claim.counters
        var changed = false
        for (writer, counter) in claim.counters where writer == self.writer || writer.isWriter(of: node) {
            let vouched = max(self.vouched[writer], shown[writer])
            if counter > vouched {
                cut[writer] = vouched
                changed = true
            }
        }
        return changed ? VersionVector(cut) : claim
    }

    /// What `batch`'s field states name of this replica's own writers (``vouchedPart(of:shown:)``).
    func shown(in batch: DeltaBatch) -> VersionVector {
        var shown: [NodeID: UInt64] = [:]
        for update in batch.updates {
            for (writer, counter) in update.change.context.counters
            where writer == self.writer || writer.isWriter(of: node) {
                shown[writer] = max(shown[writer] ?? 0, counter)
            }
        }
        return VersionVector(shown)
    }
}
