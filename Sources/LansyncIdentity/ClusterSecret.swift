public import Crypto
public import Foundation
public import LansyncCore
import SwiftASN1
public import X509

/// The cluster secret: a cluster certificate authority (a P-256 key and its self-signed
/// certificate). Whoever holds it can join the cluster, by issuing itself a node certificate.
///
/// Written by `lansync cluster create` to a PEM file (mode 0600) that every machine's `init` reads.
/// Peers trust exactly this CA and nothing else, so a node of another cluster, or with no secret,
/// cannot complete a handshake. The cluster id is derived from the CA's public key.
public struct ClusterSecret: Sendable {
    public let certificate: Certificate
    let privateKey: P256.Signing.PrivateKey

    /// Makes a new cluster authority, valid for 100 years (a cluster has no expiry date to renew).
    /// Certificates are valid from 2000-01-01: a machine whose clock is days or years behind must
    /// still sync (issue 12). A validity start protects nothing here; membership is taken away by
    /// a new cluster secret, not by expiry.
    static let validFrom = Date(timeIntervalSince1970: 946_684_800)

    public static func generate(now: Date = Date()) throws -> ClusterSecret {
        let key = P256.Signing.PrivateKey()
        let id = Identity.fingerprint(of: Certificate.PublicKey(key.publicKey))
        let name = try DistinguishedName {
            OrganizationName("lansync")
            CommonName("lansync cluster \(id.text)")
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: Self.validFrom,
            notValidAfter: now.addingTimeInterval(100 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        return ClusterSecret(certificate: certificate, privateKey: key)
    }

    /// Reads a cluster secret file's contents; throws ``IdentityError`` if it is not one.
    public init(pem: String) throws(IdentityError) {
        let (certificate, key) = try Identity.certificateAndKey(fromPEM: pem, orElse: IdentityError.notAClusterSecret)
        guard (try? certificate.extensions.basicConstraints) == .isCertificateAuthority(maxPathLength: 0) else {
            throw .notAClusterSecret("its certificate is not a cluster authority")
        }
        self.init(certificate: certificate, privateKey: key)
    }

    init(certificate: Certificate, privateKey: P256.Signing.PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The cluster's id, derived from the CA's public key.
    public var clusterID: NodeID { Identity.fingerprint(of: certificate.publicKey) }

    /// The PEM text of the file: certificate, then key.
    public func pem() throws -> String {
        try certificate.serializeAsPEM().pemString + "\n" + privateKey.pemRepresentation + "\n"
    }

    /// The CA certificate alone (what peers need to verify each other), as PEM.
    public func certificatePEM() throws -> String {
        try certificate.serializeAsPEM().pemString + "\n"
    }

    /// Issues a new node identity signed by this authority.
    public func issueNode(name: String, now: Date = Date()) throws -> NodeIdentity {
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let nodeID = Identity.fingerprint(of: publicKey)
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: publicKey,
            notValidBefore: Self.validFrom,
            notValidAfter: now.addingTimeInterval(100 * 365 * 86_400),
            issuer: self.certificate.subject,
            subject: try DistinguishedName {
                OrganizationName("lansync")
                CommonName(nodeID.text)
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames([.dnsName("\(nodeID.text).lansync")])
            },
            issuerPrivateKey: Certificate.PrivateKey(privateKey)
        )
        return NodeIdentity(certificate: certificate, privateKey: key, name: name)
    }
}

/// A node's own identity: its key and the certificate the cluster authority issued for it. The
/// node id is derived from the public key, so it cannot be claimed without the private key.
public struct NodeIdentity: Sendable {
    public let certificate: Certificate
    public let privateKey: P256.Signing.PrivateKey
    public let name: String

    public var nodeID: NodeID { Identity.fingerprint(of: certificate.publicKey) }

    init(certificate: Certificate, privateKey: P256.Signing.PrivateKey, name: String) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.name = name
    }

    /// Reads a node identity file's contents.
    public init(pem: String, name: String) throws(IdentityError) {
        let (certificate, key) = try Identity.certificateAndKey(fromPEM: pem, orElse: IdentityError.notANodeIdentity)
        self.init(certificate: certificate, privateKey: key, name: name)
    }

    public func certificatePEM() throws -> String { try certificate.serializeAsPEM().pemString + "\n" }
    public var privateKeyPEM: String { privateKey.pemRepresentation + "\n" }
    public func pem() throws -> String { try certificatePEM() + privateKeyPEM }
}

/// Identity helpers shared by the CLI and the transport.
public enum Identity {
    /// The certificate and matching P-256 key of a PEM file lansync wrote; `error` builds the
    /// failure for the kind of file expected.
    static func certificateAndKey(
        fromPEM pem: String,
        orElse failure: (String) -> IdentityError
    ) throws(IdentityError) -> (Certificate, P256.Signing.PrivateKey) {
        let documents: [PEMDocument]
        do { documents = try PEMDocument.parseMultiple(pemString: pem) } catch {
            throw failure("it is not PEM text lansync wrote")
        }
        guard let certDoc = documents.first(where: { $0.discriminator == "CERTIFICATE" }),
            let keyDoc = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }),
            let certificate = try? Certificate(pemDocument: certDoc),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: keyDoc.pemString)
        else { throw failure("it needs a CERTIFICATE and a P-256 PRIVATE KEY block") }
        guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
            throw failure("its key does not match its certificate")
        }
        return (certificate, key)
    }

    /// The id of the holder of a public key: the first 16 bytes of the SHA-256 of its
    /// SubjectPublicKeyInfo (as Syncthing's device ids are a hash of the certificate).
    public static func fingerprint(of key: Certificate.PublicKey) -> NodeID {
        NodeID(bytes: Array(SHA256.hash(data: Array(key.subjectPublicKeyInfoBytes))))
    }
}

/// Why an identity file could not be used.
public enum IdentityError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAClusterSecret(String)
    case notANodeIdentity(String)

    public var description: String {
        switch self {
        case .notAClusterSecret(let why):
            "not a lansync cluster secret (\(why)): give the file 'lansync cluster create' wrote, or copy it again from a machine of the cluster"
        case .notANodeIdentity(let why):
            "not a lansync node identity (\(why)): restore node.pem from a backup, or 'lansync init' a new data directory"
        }
    }
}
