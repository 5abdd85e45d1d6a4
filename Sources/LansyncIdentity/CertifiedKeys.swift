import Crypto
import SwiftASN1
import Synchronization
import X509

/// The members' keys this machine has seen certified by its cluster's authority: what binds a
/// signed run's key, and so its writer, to a member (Docs/SECURITY.md, "Signed writes").
///
/// A writer id starts with its member's node id, the fingerprint of the member's key, so a run
/// signed with a key whose fingerprint starts with the writer id is the work of whoever holds that
/// key; only the authority's certificate for the key says that whoever holds it is a member. A
/// member running a modified program could otherwise make up keys, and write under writer ids no
/// certificate, revocation or role names.
///
/// Checking a certificate (a DER parse and an ECDSA verification) costs about as much as a run's
/// signature, so a key is checked once and remembered (at most ``bound`` keys: past it, the
/// memory starts again). The certificate's validity dates are not checked: a write stands for
/// what its member was when it wrote, and revocation, not expiry, is how a member stops counting.
public final class CertifiedKeys: Sendable {
    let authority: ClusterCertificate
    /// Each key checked, with the certificate that certified it.
    private let known = Mutex<[[UInt8]: [UInt8]]>([:])
    static let bound = 4096

    public init(authority: ClusterCertificate) { self.authority = authority }

    /// True if `key` (P-256, compressed) is a member's: `certificate` (DER) was issued for it by
    /// the cluster's authority to a machine (not an authority); without one, if such a
    /// certificate was checked before. A certificate given is always one that holds (the caller
    /// keeps and passes it on): other bytes than the one checked before are checked in turn. Any
    /// malformed input is false, never a trap.
    public func certifies(_ key: [UInt8], by certificate: [UInt8]?) -> Bool {
        let checked = known.withLock { $0[key] }
        guard let certificate else { return checked != nil }
        if certificate == checked { return true }
        guard isMemberCertificate(certificate, of: key) else { return false }
        known.withLock { known in
            if known.count >= Self.bound { known = [:] }
            known[key] = certificate
        }
        return true
    }

    /// True if `der` is a certificate the authority issued for `key`, to a machine.
    func isMemberCertificate(_ der: [UInt8], of key: [UInt8]) -> Bool {
        guard key.count == 33, let publicKey = try? P256.Signing.PublicKey(compressedRepresentation: key),
            let certificate = try? Certificate(derEncoded: der),
            certificate.publicKey == Certificate.PublicKey(publicKey),
            authority.issued(certificate)
        else { return false }
        // The authority's own certificate is issued by itself: its key signs statements, not writes.
        if case .isCertificateAuthority = try? certificate.extensions.basicConstraints { return false }
        return true
    }
}
