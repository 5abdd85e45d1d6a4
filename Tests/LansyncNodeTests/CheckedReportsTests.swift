import Crypto
import LansyncCore
import LansyncFuzzing
import LansyncIdentity
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import LansyncWire
import Testing

@testable import LansyncNode

/// A member's signed report is verified once, and handed on every time a hello carries it
/// (``CheckedReports``): being checked never stands for being kept.
@Suite struct CheckedReportsTests {
    let member = MemberSigner(privateKey: P256.Signing.PrivateKey())
    let cluster = NodeID(high: 9, low: 9)

    func report(at: UInt64, seen: VersionVector = VersionVector()) throws -> Hello.SignedReport {
        try #require(Hello.SignedReport.signed(by: member, cluster: cluster, at: at, seen: seen))
    }

    @Test func aVerifiedReportIsNotVerifiedAgainButStillCounts() throws {
        var checked = CheckedReports()
        let first = try report(at: 10)
        let (verify, digest) = try #require(checked.triage(first))
        #expect(verify)
        checked.verified(first, digest: digest)
        // The same report again: no second verification, and not dropped either (the store
        // may not have kept it the first time).
        #expect(checked.triage(first)?.verify == false)
        // An older one teaches nothing; a newer one is verified.
        #expect(checked.triage(try report(at: 9)) == nil)
        #expect(checked.triage(try report(at: 11))?.verify == true)
    }

    @Test func theSameTimeWithOtherContentsIsVerifiedAgain() throws {
        var checked = CheckedReports()
        let signed = try report(at: 10, seen: VersionVector([member.nodeID: 1]))
        let (_, digest) = try #require(checked.triage(signed))
        checked.verified(signed, digest: digest)
        // A report made up from the verified one's time and signature, with more progress.
        var forged = signed
        forged.seen = VersionVector([member.nodeID: 5])
        #expect(checked.triage(forged)?.verify == true)
        #expect(!forged.isSigned(in: cluster))
    }

    @Test func aLaterVerifiedReportIsNotReplacedByAnEarlierOne() throws {
        var checked = CheckedReports()
        let (early, late) = (try report(at: 5), try report(at: 8))
        let lateDigest = try #require(checked.triage(late)).digest
        let earlyDigest = try #require(checked.triage(early)).digest
        checked.verified(late, digest: lateDigest)
        checked.verified(early, digest: earlyDigest)
        #expect(checked.triage(late)?.verify == false)
        #expect(checked.triage(early) == nil)
    }
}

/// On a real node and replica, sessions from memory: a member's report heard of before the
/// member was known is kept once it is (W9's regression: it was lost until the member signed a
/// new one, and a node's hellos named too few members).
@Suite struct ReportsKeptOnceKnownTests {
    func hello(from node: InProcessNode, cluster: NodeID, reports: [Hello.SignedReport]) -> [UInt8] {
        var hello = Hello(nodeID: node.id, clusterID: cluster, role: .peer, name: "p", versionVector: VersionVector())
        hello.writer = NodeID.writer(for: node.id)
        hello.signedReports = reports
        return MessageCoder.encode(.hello(hello))
    }

    func session(_ target: InProcessNode, from peer: InProcessNode, _ frame: [UInt8]) async {
        let (payloads, feed) = AsyncStream<[UInt8]>.makeStream()
        feed.yield(frame)
        feed.finish()
        _ = await target.node.session(inMemoryFrom: peer.id, payloads: payloads)
    }

    @Test func aReportHeardBeforeItsMemberWasKnownIsKeptOnceItIs() async throws {
        let dir = makeTemporaryDirectory("reports-kept")
        let cluster = try ClusterSecret.generate()
        let target = try InProcessNode(directory: dir + "/t", cluster: cluster, name: "t")
        let passer = try InProcessNode(directory: dir + "/p", cluster: cluster, name: "p")
        let member = try InProcessNode(directory: dir + "/m", cluster: cluster, name: "m")
        defer {
            for node in [target, passer, member] { Task { await node.node.shutdownPools() } }
        }
        let report = try #require(await member.node.ownReport())
        // p passes m's report on before t knows m: t verifies it and cannot keep it yet.
        await session(target, from: passer, hello(from: passer, cluster: cluster.clusterID, reports: [report]))
        #expect(try target.store.memberReports().first { $0.nodeID == member.id } == nil)
        // m itself, with the same report: t now knows m, and keeps the report it signed.
        await session(target, from: member, hello(from: member, cluster: cluster.clusterID, reports: [report]))
        let kept = try #require(try target.store.memberReports().first { $0.nodeID == member.id })
        #expect(kept.signed.map { $0 == report.encoded } == true, "the member's own signed report is kept to pass on")
    }
}
