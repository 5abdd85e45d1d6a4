public import LansyncCore
public import LansyncIdentity
import LansyncWire
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// This node's TLS credentials: its certificate and key, and the cluster authority it trusts.
///
/// Both sides of a sync connection present a certificate and verify the other's chain against the
/// cluster authority alone (mutual TLS 1.3, no hostname checks: identity is the key, not the
/// address). A peer with a certificate from another authority fails the handshake before a single
/// byte of replica data is read or sent. A client that presents no certificate at all completes
/// the handshake, but can only ask to join with an invite (``JoinerConnection``); the server sends
/// the authority's certificate after its own, so such a client can check it against the
/// fingerprint its invite pins.
public struct TLSIdentity: Sendable {
    public let nodeID: NodeID
    let certificate: NIOSSLCertificate
    let privateKey: NIOSSLPrivateKey
    let authority: NIOSSLCertificate
    /// The authority's certificate, which judges every peer's (``PeerVerdict``) and every
    /// revocation.
    public let trust: ClusterCertificate
    /// The node's key as a signer of its own claims (its progress reports), which members
    /// believe second-hand only with this signature.
    public let signer: MemberSigner
    /// The node's certificate (DER): what binds its key, and so its writes, to the cluster.
    public let certificateDER: [UInt8]

    /// - Parameters:
    ///   - nodePEM: the node's certificate and key (`DIR/node.pem`).
    ///   - clusterPEM: the cluster file (`DIR/cluster.pem`); only its certificate is used here.
    public init(nodePEM: String, clusterPEM: String) throws {
        let node = try NodeIdentity(pem: nodePEM, name: "")
        let cluster = try ClusterCertificate(pem: clusterPEM)
        trust = cluster
        nodeID = node.nodeID
        signer = MemberSigner(node)
        certificateDER = try Identity.der(node.certificate)
        certificate = try NIOSSLCertificate(bytes: Array(try node.certificatePEM().utf8), format: .pem)
        privateKey = try NIOSSLPrivateKey(bytes: Array(node.privateKeyPEM.utf8), format: .pem)
        authority = try NIOSSLCertificate(bytes: Array(try cluster.pem().utf8), format: .pem)
    }

    func serverContext() throws -> NIOSSLContext {
        var config = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: [.certificate(certificate), .certificate(authority)],
            privateKey: .privateKey(privateKey),
            trustRoots: .certificates([authority])
        )
        // A certificate presented must chain to the authority; none at all makes a joiner.
        config.certificateVerification = .optionalVerification
        config.minimumTLSVersion = .tlsv13
        return try NIOSSLContext(configuration: config)
    }

    func clientContext() throws -> NIOSSLContext {
        var config = TLSConfiguration.makeClientConfiguration()
        config.certificateChain = [.certificate(certificate)]
        config.privateKey = .privateKey(privateKey)
        config.trustRoots = .certificates([authority])
        config.certificateVerification = .noHostnameVerification
        config.minimumTLSVersion = .tlsv13
        return try NIOSSLContext(configuration: config)
    }

    /// A verification callback for one connection: it accepts exactly the chains ``trust`` judges
    /// a member's, and leaves the reason for any other in `check`, so the refusal says it in
    /// words (BoringSSL would say only CERTIFICATE_VERIFY_FAILED).
    func verifier(_ check: PeerCheck) -> NIOSSLCustomVerificationCallback {
        let trust = self.trust
        return { chain, verdict in
            let parsed = chain.compactMap { try? Certificate(derEncoded: try $0.toDERBytes()) }
            switch parsed.count == chain.count ? trust.verdict(on: parsed) : .otherCluster(nil) {
            case .member:
                verdict.succeed(.certificateVerified)
            case .otherCluster(let theirs):
                let ours = trust.clusterID.text
                check.refuse(
                    TransportError(
                        theirs.map {
                            "wrong-cluster: the peer is a node of another cluster (\($0)); this node's cluster is \(ours)"
                        } ?? "wrong-cluster: the peer's certificate is not from a lansync cluster",
                        refusal: .wrongCluster
                    )
                )
                verdict.succeed(.failed)
            case .forged:
                check.refuse(
                    TransportError(
                        "wrong-cluster: the peer's certificate names this cluster's authority, which did not sign it",
                        refusal: .wrongCluster
                    )
                )
                verdict.succeed(.failed)
            }
        }
    }

    /// The node id a verified peer certificate proves: the hash of its public key.
    static func nodeID(of certificate: NIOSSLCertificate) throws -> NodeID {
        let parsed = try Certificate(derEncoded: try certificate.toDERBytes())
        return Identity.fingerprint(of: parsed.publicKey)
    }
}

/// Why this side refused a peer's certificate during one handshake, for the error it ends with.
final class PeerCheck: Sendable {
    private let refusal = NIOLockedValueBox<TransportError?>(nil)

    func refuse(_ error: TransportError) { refusal.withLockedValue { $0 = error } }
    var refused: TransportError? { refusal.withLockedValue { $0 } }
}
