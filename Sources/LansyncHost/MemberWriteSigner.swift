import Foundation
public import LansyncCore
import LansyncIdentity
public import LansyncReplica

/// A member's key as the signer of its replica's own writes (Docs/SECURITY.md, "Signed
/// writes"): the key its certificate certifies, for its cluster.
public struct MemberWriteSigner: WriteSigner {
    let member: MemberSigner
    public let cluster: NodeID
    public let certificate: [UInt8]

    public init(_ member: MemberSigner, cluster: NodeID, certificate: [UInt8]) {
        self.member = member
        self.cluster = cluster
        self.certificate = certificate
    }

    public var publicKey: [UInt8] { member.publicKey }

    public func sign(_ bytes: [UInt8]) -> [UInt8]? { member.sign(bytes) }

    /// The signer of the node whose certificate and key are in `nodePEM` (a data directory's
    /// `node.pem`); nil if the file cannot be read as one.
    public static func load(nodePEM path: String, cluster: NodeID) -> MemberWriteSigner? {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8),
            let node = try? NodeIdentity(pem: pem, name: ""),
            let certificate = try? Identity.der(node.certificate)
        else { return nil }
        return MemberWriteSigner(MemberSigner(node), cluster: cluster, certificate: certificate)
    }
}
