import Crypto
import LansyncCore
import LansyncIdentity
import LansyncWire
import Testing

@testable import LansyncNode

/// What a peer may claim of this replica's own writers (``OwnWitness``, issue 64): only as much
/// as this replica's own signed reports, passed back, or a batch's own states vouch for.
@Suite struct OwnWitnessTests {
    let me = MemberSigner(privateKey: P256.Signing.PrivateKey())
    let stranger = MemberSigner(privateKey: P256.Signing.PrivateKey())
    let cluster = NodeID(high: 9, low: 9)

    var writer: NodeID { NodeID(high: me.nodeID.high, low: 42) }

    func hello(passingBack reports: [Hello.SignedReport]) -> Hello {
        var hello = Hello(
            nodeID: stranger.nodeID,
            clusterID: cluster,
            role: .peer,
            name: "p",
            versionVector: VersionVector()
        )
        hello.signedReports = reports
        return hello
    }

    @Test func aClaimCountsAsFarAsTheReplicasOwnSignatureVouches() throws {
        var witness = OwnWitness(node: me.nodeID, writer: writer)
        let other = NodeID(high: 5, low: 5)
        let claim = VersionVector([writer: 9, other: 100])
        // Nothing vouched: the claim on this replica's writer is cut to nothing, the rest stays.
        #expect(witness.vouchedPart(of: claim) == VersionVector([other: 100]))
        // A report in this replica's name signed by another key vouches for nothing.
        let forged = Hello.SignedReport(
            nodeID: me.nodeID,
            at: 1,
            seen: VersionVector([writer: 9]),
            key: stranger.publicKey,
            signature: stranger.sign(
                Hello.SignedReport.signedBytes(
                    cluster: cluster,
                    nodeID: me.nodeID,
                    at: 1,
                    seen: VersionVector([writer: 9])
                )
            ) ?? []
        )
        witness.learn(hello(passingBack: [forged]), cluster: cluster)
        #expect(witness.vouchedPart(of: claim)[writer] == 0)
        // Its own report, signed for another cluster: nothing either.
        let elsewhere = try #require(
            Hello.SignedReport.signed(by: me, cluster: NodeID(high: 1, low: 1), at: 2, seen: VersionVector([writer: 9]))
        )
        witness.learn(hello(passingBack: [elsewhere]), cluster: cluster)
        #expect(witness.vouchedPart(of: claim)[writer] == 0)
        // Its own report of 7 writes: the claim counts up to 7.
        let own = try #require(
            Hello.SignedReport.signed(by: me, cluster: cluster, at: 3, seen: VersionVector([writer: 7]))
        )
        witness.learn(hello(passingBack: [own]), cluster: cluster)
        #expect(witness.vouchedPart(of: claim) == VersionVector([writer: 7, other: 100]))
        // A batch's states naming the writer at 9 prove the rest.
        #expect(witness.vouchedPart(of: claim, shown: VersionVector([writer: 9])) == claim)
        // Another writer of this node (an older incarnation) is this node's too.
        let older = NodeID(high: me.nodeID.high, low: 7)
        #expect(witness.vouchedPart(of: VersionVector([older: 3]))[older] == 0)
    }

    @Test func theStatesOfABatchShowOnlyThisNodesWriters() throws {
        let witness = OwnWitness(node: me.nodeID, writer: writer)
        var state = FieldState()
        state.assign(.string("x"), dot: Dot(node: writer, counter: 4), timestamp: HLCTimestamp(rawValue: 1 << 16))
        state.assign(
            .string("y"),
            dot: Dot(node: stranger.nodeID, counter: 8),
            timestamp: HLCTimestamp(rawValue: 2 << 16)
        )
        let key = FieldKey(item: try ItemID("i"), field: try FieldName("f"))
        let batch = DeltaBatch(updates: [FieldUpdate(key: key, state: state)], covers: VersionVector())
        #expect(witness.shown(in: batch) == VersionVector([writer: 4]))
    }
}
