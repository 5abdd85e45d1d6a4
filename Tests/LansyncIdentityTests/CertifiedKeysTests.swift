import Crypto
import LansyncCore
import Testing
import X509

@testable import LansyncIdentity

/// A signed run's key counts as a member's only with a certificate the cluster's authority issued
/// for it (issue 64, "writers belong to members").
@Suite struct CertifiedKeysTests {
    let authority = try! ClusterSecret.generate()
    let stranger = try! ClusterSecret.generate()

    func compressed(_ identity: NodeIdentity) -> [UInt8] {
        Array(identity.privateKey.publicKey.compressedRepresentation)
    }

    @Test func aKeyCountsOnlyWithItsOwnCertificateFromThisAuthority() throws {
        let member = try authority.issueNode(name: "a")
        let other = try authority.issueNode(name: "b")
        let outsider = try stranger.issueNode(name: "x")
        let keys = CertifiedKeys(authority: authority.trust)
        // Another member's valid certificate does not certify this key, nor another cluster's
        // certificate for the same kind of key, nor none, nor bytes that are no certificate.
        #expect(!keys.certifies(compressed(member), by: try Identity.der(other.certificate)))
        #expect(!keys.certifies(compressed(outsider), by: try Identity.der(outsider.certificate)))
        #expect(!keys.certifies(compressed(member), by: nil))
        #expect(!keys.certifies(compressed(member), by: Array(repeating: 0x30, count: 40)))
        #expect(!keys.certifies([], by: try Identity.der(member.certificate)))
        // The authority's own certificate, for its own key: a key that signs statements, no member's.
        let authorityKey = try #require(P256.Signing.PublicKey(authority.certificate.publicKey))
        #expect(
            !keys.certifies(
                Array(authorityKey.compressedRepresentation),
                by: try Identity.der(authority.certificate)
            )
        )
        #expect(keys.certifies(compressed(member), by: try Identity.der(member.certificate)))
        // Once checked, the key counts in a batch that carries no certificate for it; but bytes
        // given as its certificate are still checked (a receiver keeps and passes on what it is
        // given), and another member's certificate does not become this key's.
        #expect(keys.certifies(compressed(member), by: nil))
        #expect(!keys.certifies(compressed(other), by: nil))
        #expect(!keys.certifies(compressed(member), by: Array(repeating: 0x30, count: 40)))
        #expect(!keys.certifies(compressed(member), by: try Identity.der(other.certificate)))
        #expect(keys.certifies(compressed(member), by: try Identity.der(member.certificate)))
    }

    @Test func everyByteOfTheCertificateMatters() throws {
        let member = try authority.issueNode(name: "a")
        let der = try Identity.der(member.certificate)
        let key = compressed(member)
        let keys = CertifiedKeys(authority: authority.trust)
        // Each changed byte, checked by a fresh memory (a key once certified stays so).
        for index in stride(from: 0, to: der.count, by: 7) {
            var changed = der
            changed[index] ^= 0x01
            #expect(!keys.isMemberCertificate(changed, of: key), "byte \(index)")
        }
        #expect(keys.isMemberCertificate(der, of: key))
    }
}
