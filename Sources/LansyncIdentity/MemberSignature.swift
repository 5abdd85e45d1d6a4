public import Crypto
public import LansyncCore
import Synchronization
import X509

/// A member's signature over a claim it makes about itself (its report of its own progress), so
/// that a machine that gets the claim second-hand can tell it from one a third member made up
/// (Docs/SECURITY.md, "What a member can and cannot do").
///
/// The member signs with the key its certificate certifies; the signature travels with the
/// public key in compressed form (33 bytes), and the key names the member, since a node id is
/// the fingerprint of its public key (``Identity/fingerprint(of:)``). A forger would need a
/// P-256 key whose SubjectPublicKeyInfo hashes to the same 128 bits as the member's.
public struct MemberSigner: Sendable {
    let privateKey: P256.Signing.PrivateKey
    /// The public key, compressed (33 bytes).
    public let publicKey: [UInt8]
    public let nodeID: NodeID

    public init(_ identity: NodeIdentity) {
        self.init(privateKey: identity.privateKey)
    }

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        publicKey = Array(privateKey.publicKey.compressedRepresentation)
        nodeID = Identity.fingerprint(of: Certificate.PublicKey(privateKey.publicKey))
    }

    /// ECDSA P-256 (SHA-256) over `bytes`: 64 bytes, r then s. Nil only if the crypto library
    /// fails, which a caller takes as "no signed claim this time".
    public func sign(_ bytes: [UInt8]) -> [UInt8]? {
        (try? privateKey.signature(for: bytes)).map { Array($0.rawRepresentation) }
    }
}

/// Checks a member's signature (``MemberSigner``).
public enum MemberSignature {
    /// True if `signature` over `bytes` was made with the private half of `key`, and `key` is
    /// `node`'s: its fingerprint is `node`. Any malformed input is false, never a trap.
    public static func isValid(_ signature: [UInt8], of bytes: [UInt8], key: [UInt8], by node: NodeID) -> Bool {
        guard key.count == 33, signature.count == 64,
            let publicKey = try? P256.Signing.PublicKey(compressedRepresentation: key),
            Identity.fingerprint(of: Certificate.PublicKey(publicKey)) == node,
            let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return publicKey.isValidSignature(parsed, for: bytes)
    }

    /// True if `signature` over `bytes` was made with the private half of `key`, and `key` is the
    /// key of the member `writer` belongs to: its fingerprint's first 64 bits are the writer id's
    /// (every writer id a node takes starts with its node id's). Any malformed input is false.
    public static func isValid(_ signature: [UInt8], of bytes: [UInt8], key: [UInt8], forWriter writer: NodeID) -> Bool
    {
        guard key.count == 33, signature.count == 64, let member = memberKeys.key(key), member.node.high == writer.high,
            let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return member.key.isValidSignature(parsed, for: bytes)
    }

    /// The members' keys met lately, parsed, with their fingerprints: a key is decompressed and
    /// fingerprinted once, not at every run a batch carries (tens of µs each, beside a check's 72).
    static let memberKeys = MemberKeys()
}

/// Parsed member keys by their compressed bytes, each with the node id it fingerprints; at most
/// ``bound`` (a member can make up as many keys as it likes: past the bound the memory starts
/// again).
final class MemberKeys: Sendable {
    private let keys = Mutex<[[UInt8]: (key: P256.Signing.PublicKey, node: NodeID)]>([:])
    static let bound = 4096

    /// The key of `bytes` and its node id; nil if they are no P-256 key.
    func key(_ bytes: [UInt8]) -> (key: P256.Signing.PublicKey, node: NodeID)? {
        if let known = keys.withLock({ $0[bytes] }) { return known }
        guard let key = try? P256.Signing.PublicKey(compressedRepresentation: bytes) else { return nil }
        let parsed = (key: key, node: Identity.fingerprint(of: Certificate.PublicKey(key)))
        keys.withLock { keys in
            if keys.count >= Self.bound { keys = [:] }
            keys[bytes] = parsed
        }
        return parsed
    }
}
