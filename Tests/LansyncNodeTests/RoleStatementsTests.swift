import Foundation
import LansyncCore
import LansyncIdentity
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Testing

@testable import LansyncNode

/// The roles a node holds (``ClusterStatements``): the same refused writes and the same latest
/// role whatever order the statements came in, a node's own replica read-only exactly while its
/// latest role is reader, and a writer a reader cut named never written under again.
@Suite struct RoleStatementsTests {
    let authority = try! ClusterSecret.generate()
    let admitter = NodeID.node(1)
    let member = NodeID.node(2)

    func holder(_ dir: String, _ name: String, own: NodeID) throws -> (ClusterStatements, ReplicaStore) {
        let store = try SessionRunnerTests.store(dir, name, node: own, cluster: authority.clusterID)
        return (ClusterStatements(store: store, io: BlockingIO(threads: 1), trust: authority.trust, own: own), store)
    }

    func records(_ statements: [RoleStatement]) -> [[UInt8]] { statements.map { ClusterStatement.role($0).encoded } }

    @Test func everyOrderGivesTheSameRolesAndRefusals() async throws {
        let dir = makeTemporaryDirectory("roles")
        let old = NodeID.writer(for: member)
        let reader = try RoleStatement.make(
            node: member,
            name: "m",
            role: .reader,
            at: 10,
            by: admitter,
            keeping: [old: 5],
            authority: authority
        )
        let writer = try RoleStatement.make(
            node: member,
            name: "m",
            role: .writer,
            at: 20,
            by: admitter,
            keeping: [:],
            authority: authority
        )
        let fresh = NodeID.writer(for: member)
        var seen: [RevokedWriters] = []
        for (index, order) in [reader + writer, writer + reader].enumerated() {
            let (statements, _) = try holder(dir, "o\(index)", own: admitter)
            _ = await statements.learn(records(order))
            #expect(statements.role(of: member)?.role == .writer, "the later statement counts")
            seen.append(statements.revokedWriters)
        }
        #expect(seen[0] == seen[1], "the same refusals whatever the order")
        let refusals = seen[0]
        #expect(refusals.refusal(of: Dot(node: old, counter: 6)) != nil, "what it wrote as a reader stays refused")
        #expect(refusals.refusal(of: Dot(node: old, counter: 5)) == nil)
        #expect(refusals.refusal(of: Dot(node: fresh, counter: 1)) == nil, "a writer again writes under a new writer")

        // The member's own node, both orders, and learning them one at a time: read-only never
        // stays, and the writer the cut names is left for a new one.
        for (index, batches) in [[reader + writer], [writer + reader], [reader, writer], [writer, reader]].enumerated()
        {
            let (statements, store) = try holder(dir, "m\(index)", own: member)
            let first = try store.apply(.create(type: "t", assignments: []), to: .named("x"), wallMilliseconds: 1)
            let cut = try RoleStatement.make(
                node: member,
                name: "m",
                role: .reader,
                at: 10,
                by: admitter,
                keeping: [first.node: first.counter],
                authority: authority
            )
            for batch in batches {
                _ = await statements.learn(records(batch.map { $0.role == .reader ? cut[0] : $0 }))
            }
            #expect(try store.readOnlyReason() == nil, "order \(index): a writer again may write")
            #expect(statements.revokedWriters.isEmpty, "order \(index): its own cut is not applied to itself")
            let next = try store.apply(.update([.set(.named("n"), .integer(1))]), to: .named("x"), wallMilliseconds: 2)
            #expect(next.node != first.node, "order \(index): still writing under the writer the cut ends")
        }
        let (statements, store) = try holder(dir, "r", own: member)
        _ = await statements.learn(records(reader))
        #expect(try store.readOnlyReason()?.contains("made a reader") == true)
    }
}
