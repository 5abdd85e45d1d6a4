public import LansyncCore

/// What every kind of cluster statement (``Revocation``, ``AdmitterSet``, ``Admission``) is: a
/// body of fields, signed with the cluster authority's key. One definition of how one is signed,
/// checked and written, so that the kinds differ only in their fields.
///
/// The signed message is the kind's ``label``, the cluster's id, then the body; the binary form
/// (inside a ``ClusterStatement``) is the body, then the signature. Both are part of the protocol
/// (Docs/SECURITY.md): changing either breaks every statement already kept.
public protocol SignedStatement: Sendable {
    /// Opens the signed message: names the kind and its version (`lansync admission 1`).
    var label: String { get }
    var signature: [UInt8] { get }
    /// Writes the statement's fields: what is signed after the label and the cluster's id, and
    /// what the binary form holds before the signature.
    func writeBody(to w: inout ByteWriter)
    /// The same statement with `signature`.
    func replacingSignature(_ signature: [UInt8]) -> Self
}

extension SignedStatement {
    /// The message the authority signs, for the cluster `cluster`.
    public func signedBytes(cluster: NodeID) -> [UInt8] {
        var w = ByteWriter()
        w.string(label)
        w.raw(cluster.bytes)
        writeBody(to: &w)
        return w.bytes
    }

    /// The statement signed with the authority's key.
    public func signed(with authority: ClusterSecret) throws -> Self {
        replacingSignature(try ClusterStatement.sign(signedBytes(cluster: authority.clusterID), with: authority))
    }

    /// True if this cluster's authority signed it.
    public func isSigned(by trust: ClusterCertificate) -> Bool {
        ClusterStatement.verify(signature, signedBytes(cluster: trust.clusterID), by: trust)
    }

    /// The binary form: the body, then the signature.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        writeBody(to: &w)
        w.data(signature)
        return w.bytes
    }
}
