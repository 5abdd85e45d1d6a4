import Crypto
import LansyncCore
import LansyncIdentity
import LansyncReplica
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

/// The members' signed reports this node has checked, so that a hello's hundreds of reports
/// cost a signature's verification only once each, and not at the price of forgetting any.
///
/// Checked is not taken: a report checked in one hello may not be kept from it (the store keeps
/// a report passed on only of a member it knows, and a member becomes known later, when it is
/// met or its writes arrive), so every valid report is handed on again each time a hello
/// carries it, and the store decides. Before, a report was marked taken once checked, and one
/// heard of before its member was known was lost until the member signed a new one (a minute
/// later, or at its next write): a node passed on fewer reports, a new node's first hellos named
/// too few members for it to know the cluster was large, and it dialled every address passed on
/// as in a full mesh (W9 at 200 nodes: 7.9 sessions a node instead of 7.0, more bytes and CPU
/// per edit).
///
/// A report counts as checked only if it is the same, byte for byte (its digest), as one whose
/// signature was verified: the same member and time with other contents is checked again.
struct CheckedReports: Sendable {
    /// The latest report verified of each member: its time and the digest of its wire form.
    private var latest: [NodeID: (at: UInt64, digest: SHA256Digest)] = [:]

    /// At most this many members' reports are remembered (a member can sign reports for as many
    /// keys as it makes up); past it the memory starts again, and reports are checked anew.
    static let bound = 8192

    /// What to do with `report`: nil if it is older than the latest one verified of its member
    /// (it teaches nothing); else whether it still needs its signature verified, and its digest.
    func triage(_ report: Hello.SignedReport) -> (verify: Bool, digest: SHA256Digest)? {
        let held = latest[report.nodeID]
        if let held, report.at < held.at { return nil }
        let digest = SHA256.hash(data: report.encoded)
        return (held.map { $0.at != report.at || $0.digest != digest } ?? true, digest)
    }

    /// `report` was verified: it is the latest of its member unless a later one was.
    mutating func verified(_ report: Hello.SignedReport, digest: SHA256Digest) {
        if latest.count >= Self.bound, latest[report.nodeID] == nil { latest = [:] }
        if let held = latest[report.nodeID], held.at > report.at { return }
        latest[report.nodeID] = (report.at, digest)
    }
}
