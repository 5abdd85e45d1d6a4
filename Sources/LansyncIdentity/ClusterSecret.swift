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

    /// The authority's certificate alone: what every member holds.
    public var trust: ClusterCertificate { ClusterCertificate(certificate: certificate) }

    /// Issues a new node identity signed by this authority.
    public func issueNode(name: String, now: Date = Date()) throws -> NodeIdentity {
        let key = P256.Signing.PrivateKey()
        let certificate = try issueCertificate(for: Certificate.PublicKey(key.publicKey), now: now)
        return NodeIdentity(certificate: certificate, privateKey: key, name: name)
    }

    /// Issues a node certificate for a public key a joining machine sent (DER); returns its DER.
    public func issueCertificate(forPublicKeyDER der: [UInt8], now: Date = Date()) throws -> [UInt8] {
        try Identity.der(try issueCertificate(for: try Identity.publicKey(der: der), now: now))
    }

    /// Issues a node certificate for a key made elsewhere (a machine joining with an invite: its
    /// private key never leaves it).
    public func issueCertificate(for publicKey: Certificate.PublicKey, now: Date = Date()) throws -> Certificate {
        let nodeID = Identity.fingerprint(of: publicKey)
        return try Certificate(
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
    }
}

/// The cluster authority's certificate without its key: what a member that cannot admit others
/// holds (`DIR/cluster.pem`), and all that any member needs to verify its peers.
public struct ClusterCertificate: Sendable, Equatable {
    public let certificate: Certificate

    init(certificate: Certificate) { self.certificate = certificate }

    /// Reads the certificate of a cluster file, with or without the authority's key in it.
    public init(pem: String) throws(IdentityError) {
        let documents: [PEMDocument]
        do { documents = try PEMDocument.parseMultiple(pemString: pem) } catch {
            throw .notAClusterSecret("it is not PEM text lansync wrote")
        }
        guard let document = documents.first(where: { $0.discriminator == "CERTIFICATE" }),
            let certificate = try? Certificate(pemDocument: document)
        else { throw .notAClusterSecret("it has no CERTIFICATE block") }
        try self.init(verifying: certificate)
    }

    /// The authority certificate a peer sent, in DER.
    public init(der: [UInt8]) throws(IdentityError) {
        guard let certificate = try? Certificate(derEncoded: der) else {
            throw .notAClusterSecret("it is not a DER certificate")
        }
        try self.init(verifying: certificate)
    }

    /// A certificate that must be a cluster authority's (self-signed, a CA); throws if it is not.
    public init(verifying certificate: Certificate) throws(IdentityError) {
        guard (try? certificate.extensions.basicConstraints) == .isCertificateAuthority(maxPathLength: 0),
            certificate.issuer == certificate.subject,
            certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
        else { throw .notAClusterSecret("its certificate is not a cluster authority") }
        self.certificate = certificate
    }

    /// The cluster's id, derived from the authority's public key.
    public var clusterID: NodeID { Identity.fingerprint(of: certificate.publicKey) }

    /// True if this authority issued `node` (its issuer and signature).
    public func issued(_ node: Certificate) -> Bool {
        node.issuer == certificate.subject && certificate.publicKey.isValidSignature(node.signature, for: node)
    }

    public func pem() throws -> String { try certificate.serializeAsPEM().pemString + "\n" }

    public func der() throws -> [UInt8] { try Identity.der(certificate) }
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

    /// A node identity from a key made here and the certificate an admitting machine issued for it;
    /// throws if the certificate is for another key.
    public init(
        issued certificate: Certificate,
        privateKey: P256.Signing.PrivateKey,
        name: String
    ) throws(IdentityError) {
        guard certificate.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
            throw .notANodeIdentity("the certificate is for another key")
        }
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

    /// The node id of a public key a joining machine sent (DER SubjectPublicKeyInfo); throws if
    /// it is not a P-256 key.
    public static func nodeID(ofPublicKeyDER der: [UInt8]) throws(IdentityError) -> NodeID {
        fingerprint(of: try publicKey(der: der))
    }

    static func publicKey(der: [UInt8]) throws(IdentityError) -> Certificate.PublicKey {
        guard let key = try? P256.Signing.PublicKey(derRepresentation: der) else {
            throw .notANodeIdentity("the public key is not a P-256 key")
        }
        return Certificate.PublicKey(key)
    }

    /// A certificate's DER bytes.
    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
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

/// The key a machine makes for itself when it joins with an invite. Only its public half leaves
/// the machine; the certificate an inviter issues for it completes a ``NodeIdentity``.
public struct NodeKey: Sendable {
    let privateKey: P256.Signing.PrivateKey

    public init() { privateKey = P256.Signing.PrivateKey() }

    /// The public key as a joining machine sends it (DER SubjectPublicKeyInfo).
    public var publicKeyDER: [UInt8] { Array(privateKey.publicKey.derRepresentation) }

    public var nodeID: NodeID { Identity.fingerprint(of: Certificate.PublicKey(privateKey.publicKey)) }

    /// The identity the inviter's answer completes; throws unless `authority` issued the
    /// certificate (DER) and it is for this key.
    public func identity(
        issued der: [UInt8],
        by authority: ClusterCertificate,
        name: String
    ) throws(IdentityError) -> NodeIdentity {
        guard let certificate = try? Certificate(derEncoded: der) else {
            throw .notANodeIdentity("the inviter's answer holds no certificate")
        }
        guard authority.issued(certificate) else {
            throw .notANodeIdentity("the certificate was not issued by the cluster's authority")
        }
        return try NodeIdentity(issued: certificate, privateKey: privateKey, name: name)
    }
}

/// What a node makes of the certificate chain a peer presented in the TLS handshake.
public enum PeerVerdict: Sendable, Equatable {
    /// Issued by this cluster's authority: the peer is the node with this id.
    case member(NodeID)
    /// Issued by another lansync cluster's authority (its id, as the certificate names it), or,
    /// with nil, not a lansync certificate at all.
    case otherCluster(String?)
    /// It names this cluster's authority as issuer, but that authority did not sign it.
    case forged
}

extension ClusterCertificate {
    /// Judges a presented chain, leaf first. Only the leaf counts: it must be signed by this
    /// authority. Validity dates are not checked: certificates are valid from 2000 for a century,
    /// so that a machine with a wrong clock still syncs (issue 12).
    public func verdict(on chain: [Certificate]) -> PeerVerdict {
        guard let leaf = chain.first else { return .otherCluster(nil) }
        if issued(leaf) { return .member(Identity.fingerprint(of: leaf.publicKey)) }
        if leaf.issuer == certificate.subject { return .forged }
        let issuer = String(describing: leaf.issuer)
        guard let range = issuer.range(of: "lansync cluster ") else { return .otherCluster(nil) }
        let id = issuer[range.upperBound...].prefix { $0.isLetter || $0.isNumber }
        return .otherCluster(id.isEmpty ? nil : String(id))
    }
}
