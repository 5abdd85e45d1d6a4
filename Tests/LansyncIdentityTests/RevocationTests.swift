import LansyncCore
import LansyncIdentity
import Testing

/// Cluster statements (revocations, admitter sets): only the cluster's authority can make one
/// that members accept, and no byte of one can change unnoticed.
@Suite struct ClusterStatementTests {
    let authority = try! ClusterSecret.generate()
    let other = try! ClusterSecret.generate()

    /// Every byte flipped in turn: the statement no longer reads, or no longer verifies.
    func expectTamperEvident(_ statement: ClusterStatement, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = statement.encoded
        #expect(ClusterStatement(encoded: bytes) == statement, sourceLocation: sourceLocation)
        for i in bytes.indices {
            var changed = bytes
            changed[i] ^= 0x20
            if let read = ClusterStatement(encoded: changed) {
                #expect(
                    !read.isSigned(by: authority.trust),
                    "byte \(i) changed, still signed",
                    sourceLocation: sourceLocation
                )
            }
        }
        #expect(ClusterStatement(encoded: []) == nil && ClusterStatement(encoded: bytes + [0]) == nil)
    }

    @Test func onlyTheAuthoritysRevocationsCount() throws {
        let node = NodeKey().nodeID
        let by = NodeKey().nodeID
        let revocation = try Revocation.make(
            node: node,
            name: "laptop",
            reason: "lost on the train",
            at: 1_700_000_000_000,
            by: by,
            authority: authority
        )
        #expect(revocation.isSigned(by: authority.trust))
        #expect(!revocation.isSigned(by: other.trust), "another cluster's authority did not sign it")
        let forged = try Revocation.make(node: node, name: "laptop", reason: "", at: 1, by: by, authority: other)
        #expect(!forged.isSigned(by: authority.trust))
        expectTamperEvident(.revocation(revocation))
        // A node's revocations share a key (the first one stays); the reason is cut between
        // characters, and still signed.
        let long = try Revocation.make(
            node: node,
            name: "x",
            reason: "a" + String(repeating: "é", count: 300),
            at: 2,
            by: by,
            authority: authority
        )
        #expect(ClusterStatement.revocation(long).key == ClusterStatement.revocation(revocation).key)
        #expect(long.reason.utf8.count <= Revocation.maxReasonBytes && long.isSigned(by: authority.trust))
        #expect(ClusterStatement(encoded: ClusterStatement.revocation(long).encoded) == .revocation(long))
    }

    @Test func onlyTheAuthoritysAdmitterSetsCount() throws {
        let kitchen = NodeKey().nodeID
        let relay = NodeKey().nodeID
        let set = try AdmitterSet.make(nodes: [relay, kitchen, kitchen], at: 5, by: kitchen, authority: authority)
        #expect(set.nodes == [kitchen, relay].sorted(), "each machine once, in order")
        #expect(set.isSigned(by: authority.trust) && !set.isSigned(by: other.trust))
        expectTamperEvident(.admitters(set))
        let later = try AdmitterSet.make(nodes: [kitchen], at: 6, by: kitchen, authority: authority)
        #expect(ClusterStatement.admitters(later).key != ClusterStatement.admitters(set).key, "every set is kept")
        #expect(ClusterStatement(encoded: [9, 1, 2]) == nil, "an unknown kind is passed over")
    }
}
