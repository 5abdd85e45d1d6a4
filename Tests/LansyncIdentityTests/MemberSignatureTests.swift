import Crypto
import LansyncCore
import Testing

@testable import LansyncIdentity

/// A member's signature over a claim about itself (issue 64): it verifies only with the key
/// whose fingerprint is the member's id, over exactly the bytes signed.
@Suite struct MemberSignatureTests {
    let member = MemberSigner(privateKey: P256.Signing.PrivateKey())
    let other = MemberSigner(privateKey: P256.Signing.PrivateKey())
    let bytes = Array("lansync member report 1: seen everything".utf8)

    @Test func onlyTheMembersOwnKeySpeaksForIt() throws {
        let signature = try #require(member.sign(bytes))
        #expect(signature.count == 64 && member.publicKey.count == 33)
        #expect(MemberSignature.isValid(signature, of: bytes, key: member.publicKey, by: member.nodeID))
        // Another member's key, claiming the first member's id: its fingerprint is not that id.
        let forged = try #require(other.sign(bytes))
        #expect(!MemberSignature.isValid(forged, of: bytes, key: other.publicKey, by: member.nodeID))
        // The right key, another member's signature.
        #expect(!MemberSignature.isValid(forged, of: bytes, key: member.publicKey, by: member.nodeID))
        // Every byte of the claim, the signature and the key matters.
        for i in bytes.indices {
            var changed = bytes
            changed[i] ^= 1
            #expect(!MemberSignature.isValid(signature, of: changed, key: member.publicKey, by: member.nodeID))
        }
        for i in signature.indices {
            var changed = signature
            changed[i] ^= 1
            #expect(!MemberSignature.isValid(changed, of: bytes, key: member.publicKey, by: member.nodeID))
        }
        for i in member.publicKey.indices {
            var changed = member.publicKey
            changed[i] ^= 1
            #expect(!MemberSignature.isValid(signature, of: bytes, key: changed, by: member.nodeID))
        }
        // Malformed input is false, never a trap.
        #expect(!MemberSignature.isValid([], of: bytes, key: member.publicKey, by: member.nodeID))
        #expect(!MemberSignature.isValid(signature, of: bytes, key: [], by: member.nodeID))
        #expect(
            !MemberSignature.isValid(
                [UInt8](repeating: 0, count: 64),
                of: bytes,
                key: member.publicKey,
                by: member.nodeID
            )
        )
    }

    @Test func theSignersIdIsItsCertificatesNodeID() throws {
        let secret = try ClusterSecret.generate()
        let identity = try secret.issueNode(name: "a")
        #expect(MemberSigner(identity).nodeID == identity.nodeID)
    }
}
