import Foundation
import LansyncCore
import LansyncIdentity
import Testing

/// The invite code's text form and its proof (Docs/SECURITY.md, "Joining").
@Suite struct InviteCodeTests {
    let cluster = NodeID(bytes: Array(1...16))
    let secret: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]

    @Test func readsBackWhatItWrites() throws {
        let withAddress = InviteCode(clusterID: cluster, secret: secret, host: "192.168.1.20", port: 7420)
        let read = try InviteCode(text: withAddress.text)
        #expect(read == withAddress)
        #expect(read.host == "192.168.1.20" && read.port == 7420)
        #expect(read.pins(cluster) && !read.pins(NodeID(bytes: Array(2...17))))
        #expect(withAddress.text.hasPrefix("LSJ1-"))
        let groups = withAddress.text.components(separatedBy: "-").dropFirst()
        #expect(groups.allSatisfy { $0.count <= 4 })

        let bare = InviteCode(clusterID: cluster, secret: secret, host: nil, port: nil)
        let readBare = try InviteCode(text: bare.text)
        #expect(readBare == bare && readBare.host == nil)
        // People may type it in lower case, without dashes, with I/L for 1 and O for 0.
        let sloppy = bare.text.lowercased().replacingOccurrences(of: "-", with: " ")
            .replacingOccurrences(of: "1", with: "l").replacingOccurrences(of: "0", with: "o")
        #expect(try InviteCode(text: sloppy) == bare)
    }

    @Test func aHostNameOrIPv6AddressIsLeftOut() {
        #expect(InviteCode(clusterID: cluster, secret: secret, host: "kitchen.local", port: 7420).host == nil)
        #expect(InviteCode(clusterID: cluster, secret: secret, host: "::1", port: 7420).host == nil)
    }

    /// Every one-character change is refused, or (in the last character's padding bits) reads as
    /// the very same invite: a mistyped code never reaches another machine's secret.
    @Test func everyMistypedCharacterIsCaught() throws {
        let code = InviteCode(clusterID: cluster, secret: secret, host: "10.0.0.7", port: 7420)
        let text = Array(code.text)
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        var refused = 0
        for i in text.indices.dropFirst(5) where text[i] != "-" {
            for c in alphabet where c != text[i] {
                var typo = text
                typo[i] = c
                if let read = try? InviteCode(text: String(typo)) {
                    #expect(read == code, "position \(i), \(c) read as another invite")
                } else {
                    refused += 1
                }
            }
        }
        #expect(refused > 1000)
        #expect(throws: InviteCodeError.notACode) { try InviteCode(text: "hello") }
        #expect(throws: InviteCodeError.badCharacter) { try InviteCode(text: "LSJ1-ABCU") }
        #expect(throws: InviteCodeError.wrongLength) { try InviteCode(text: String(code.text.dropLast(5))) }
    }

    @Test func theProofBindsSecretKeyAndName() {
        let code = InviteCode(clusterID: cluster, secret: secret, host: nil, port: nil)
        let key = NodeKey()
        let proof = code.proof(publicKey: key.publicKeyDER, name: "garage")
        #expect(proof.count == 32)
        #expect(InviteCode.verify(proof: proof, secret: secret, publicKey: key.publicKeyDER, name: "garage"))
        #expect(!InviteCode.verify(proof: proof, secret: secret, publicKey: NodeKey().publicKeyDER, name: "garage"))
        #expect(!InviteCode.verify(proof: proof, secret: secret, publicKey: key.publicKeyDER, name: "kitchen"))
        #expect(
            !InviteCode.verify(
                proof: proof,
                secret: InviteCode.newSecret(),
                publicKey: key.publicKeyDER,
                name: "garage"
            )
        )
    }

    /// The inviter's certificate completes the joiner's identity only if this cluster's authority
    /// issued it for this key.
    @Test func aJoinerAcceptsOnlyItsOwnCertificateFromItsAuthority() throws {
        let authority = try ClusterSecret.generate()
        let other = try ClusterSecret.generate()
        let key = NodeKey()
        let issued = try authority.issueCertificate(forPublicKeyDER: key.publicKeyDER)
        let identity = try key.identity(issued: issued, by: authority.trust, name: "b")
        #expect(identity.nodeID == key.nodeID)
        #expect(throws: IdentityError.self) { try key.identity(issued: issued, by: other.trust, name: "b") }
        let forAnother = try authority.issueCertificate(forPublicKeyDER: NodeKey().publicKeyDER)
        #expect(throws: IdentityError.self) { try key.identity(issued: forAnother, by: authority.trust, name: "b") }
        // The file a member holds has the certificate and no key.
        let memberFile = try authority.trust.pem()
        #expect(!memberFile.contains("PRIVATE KEY"))
        #expect(try ClusterCertificate(pem: memberFile).clusterID == authority.clusterID)
        #expect(throws: IdentityError.self) { try ClusterSecret(pem: memberFile) }
    }
}
