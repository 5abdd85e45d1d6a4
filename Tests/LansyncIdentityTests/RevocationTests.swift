import LansyncCore
import LansyncIdentity
import Testing

/// Revocations: only the cluster's authority can make one that members accept.
@Suite struct RevocationTests {
    @Test func onlyTheAuthoritysSignatureCounts() throws {
        let authority = try ClusterSecret.generate()
        let other = try ClusterSecret.generate()
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

        // The binary form reads back, and any change to it breaks the signature or the reading.
        let bytes = revocation.encoded
        #expect(Revocation(encoded: bytes) == revocation)
        for i in stride(from: 0, to: bytes.count, by: 7) {
            var changed = bytes
            changed[i] ^= 0x20
            if let read = Revocation(encoded: changed) {
                #expect(!read.isSigned(by: authority.trust), "byte \(i) changed and the signature still holds")
            }
        }
        #expect(Revocation(encoded: []) == nil && Revocation(encoded: bytes + [0]) == nil)
        // A long reason is cut, and still signed.
        let long = try Revocation.make(
            node: node,
            name: "x",
            reason: "a" + String(repeating: "é", count: 300),
            at: 2,
            by: by,
            authority: authority
        )
        #expect(long.reason.utf8.count <= Revocation.maxReasonBytes && long.isSigned(by: authority.trust))
        #expect(Revocation(encoded: long.encoded) == long, "cut between characters, it reads back")
    }
}
