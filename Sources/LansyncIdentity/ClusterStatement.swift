import Crypto
public import LansyncCore
import X509

/// A statement about the cluster's membership, signed with the cluster authority's key, that every
/// hello carries to the peer (protocol 1.3) so that it reaches every member: a revocation, or the
/// set of machines that may hold the authority's key (Docs/SECURITY.md).
///
/// Kinds: 1, a revocation without a write cut (made by protocol 1.3 nodes); 2, a set of
/// admitting machines; 3, a revocation with its write cut (one part of it); 4, an admission; 5,
/// the collection settings; 6, a member's role (one part of it); 7, whether writes must be
/// signed (one part of its cut).
///
/// A node keeps only statements its own authority signed; a peer's forged or damaged ones are
/// dropped. Revocations accumulate; of the admitter sets, the latest counts.
public enum ClusterStatement: Sendable, Hashable {
    case revocation(Revocation)
    case admitters(AdmitterSet)
    case admission(Admission)
    case settings(ClusterSettings)
    case role(RoleStatement)
    case signedWrites(SignedWritesStatement)

    /// The binary form: a kind byte, then the statement's own.
    public var encoded: [UInt8] {
        switch self {
        case .revocation(let revocation): [revocation.cut == nil ? 1 : 3] + revocation.encoded
        case .admitters(let set): [2] + set.encoded
        case .admission(let admission): [4] + admission.encoded
        case .settings(let settings): [5] + settings.encoded
        case .role(let role): [6] + role.encoded
        case .signedWrites(let statement): [7] + statement.encoded
        }
    }

    /// Reads the binary form; nil for anything else (unknown kinds included: a newer node's
    /// statements are passed over, not fatal).
    public init?(encoded bytes: [UInt8]) {
        guard let kind = bytes.first else { return nil }
        let body = Array(bytes.dropFirst())
        switch kind {
        case 1, 3:
            guard let r = Revocation(encoded: body, withCut: kind == 3) else { return nil }
            self = .revocation(r)
        case 2:
            guard let s = AdmitterSet(encoded: body) else { return nil }
            self = .admitters(s)
        case 4:
            guard let a = Admission(encoded: body) else { return nil }
            self = .admission(a)
        case 5:
            guard let s = ClusterSettings(encoded: body) else { return nil }
            self = .settings(s)
        case 6:
            guard let r = RoleStatement(encoded: body) else { return nil }
            self = .role(r)
        case 7:
            guard let s = SignedWritesStatement(encoded: body) else { return nil }
            self = .signedWrites(s)
        default: return nil
        }
    }

    public func isSigned(by trust: ClusterCertificate) -> Bool {
        switch self {
        case .revocation(let revocation): revocation.isSigned(by: trust)
        case .admitters(let set): set.isSigned(by: trust)
        case .admission(let admission): admission.isSigned(by: trust)
        case .settings(let settings): settings.isSigned(by: trust)
        case .role(let role): role.isSigned(by: trust)
        case .signedWrites(let statement): statement.isSigned(by: trust)
        }
    }

    /// What makes a statement new to a replica: a node's first revocation stays (a second one
    /// adds nothing), and so does each part of each cut (two admitting machines may revoke the
    /// same node, each with its own cut); every admitter set is kept (the latest counts).
    public var key: [UInt8] {
        switch self {
        case .revocation(let revocation):
            if let cut = revocation.cut {
                [3] + revocation.cutID + [
                    UInt8(truncatingIfNeeded: cut.part >> 8), UInt8(truncatingIfNeeded: cut.part),
                ]
            } else {
                [1] + revocation.node.bytes
            }
        case .admitters(let set): [2] + Array(SHA256.hash(data: set.signature).prefix(16))
        case .admission(let admission): [4] + admission.node.bytes
        case .settings(let settings): [5] + Array(SHA256.hash(data: settings.signature).prefix(16))
        case .role(let role):
            [6] + role.statementID + [
                UInt8(truncatingIfNeeded: role.cut.part >> 8), UInt8(truncatingIfNeeded: role.cut.part),
            ]
        case .signedWrites(let statement):
            [7] + statement.statementID + [
                UInt8(truncatingIfNeeded: statement.part >> 8), UInt8(truncatingIfNeeded: statement.part),
            ]
        }
    }

    /// The stamp (``ClusterSettings/at``, ``AdmitterSet/at``) for a statement made now that
    /// supersedes `latest`: the wall clock, but past `latest` whatever the clock says. The
    /// stamps of settings and admitter sets are Lamport clocks: the signer holds the one it
    /// replaces, so a newer statement orders after it even when the signer's clock is behind
    /// (issue 62: an admitting machine ten minutes slow made settings that every member,
    /// itself included after a restart, took as older than the ones they replaced).
    /// Nil if `latest` carries the largest stamp there is: nothing made after can order past it.
    public static func stamp(now: UInt64, after latest: UInt64?) -> UInt64? {
        guard let latest else { return now }
        guard latest < .max else { return nil }
        return Swift.max(now, latest + 1)
    }

    /// Whether a statement stamped `at` and signed `signature` supersedes one stamped `otherAt`
    /// and signed `otherSignature`: the later stamp, and between equal stamps (two admitting
    /// machines at once) the larger signature, so every member keeps the same one whatever the
    /// order it heard them in.
    static func supersedes(_ at: UInt64, _ signature: [UInt8], _ otherAt: UInt64, _ otherSignature: [UInt8]) -> Bool {
        at != otherAt ? at > otherAt : otherSignature.lexicographicallyPrecedes(signature)
    }

    /// Signs `message` with the authority's key (DER ECDSA).
    static func sign(_ message: [UInt8], with authority: ClusterSecret) throws -> [UInt8] {
        Array(try authority.privateKey.signature(for: message).derRepresentation)
    }

    /// True if `signature` over `message` is the authority's.
    static func verify(_ signature: [UInt8], _ message: [UInt8], by trust: ClusterCertificate) -> Bool {
        guard let key = P256.Signing.PublicKey(trust.certificate.publicKey),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature)
        else { return false }
        return key.isValidSignature(signature, for: message)
    }
}

/// The machines that may hold the cluster authority's key (and so admit and revoke others), as
/// `lansync cluster admitters` names them. A member not in the latest set that still holds the
/// key removes it from its data directory when the set reaches it: how an existing cluster, where
/// every machine was initialised with the cluster file, moves to invites.
public struct AdmitterSet: SignedStatement, Hashable {
    public let nodes: [NodeID]
    /// Wall-clock milliseconds when it was made; the latest set counts.
    public let at: UInt64
    public let by: NodeID
    public let signature: [UInt8]

    /// Whether this set counts instead of `other` (``ClusterStatement/supersedes(_:_:_:_:)``).
    public func supersedes(_ other: AdmitterSet?) -> Bool {
        guard let other else { return true }
        return ClusterStatement.supersedes(at, signature, other.at, other.signature)
    }

    /// At most this many admitting machines (the set must fit one hello statement).
    public static let maxNodes = 128

    public static func make(nodes: [NodeID], at: UInt64, by: NodeID, authority: ClusterSecret) throws -> AdmitterSet {
        try AdmitterSet(nodes: Array(Set(nodes)).sorted(), at: at, by: by, signature: []).signed(with: authority)
    }

    init(nodes: [NodeID], at: UInt64, by: NodeID, signature: [UInt8]) {
        self.nodes = nodes
        self.at = at
        self.by = by
        self.signature = signature
    }

    public var label: String { "lansync admitters 1" }

    public func writeBody(to w: inout ByteWriter) {
        w.varint(UInt64(nodes.count))
        for node in nodes { w.raw(node.bytes) }
        w.fixed64(at)
        w.raw(by.bytes)
    }

    public func replacingSignature(_ signature: [UInt8]) -> AdmitterSet {
        AdmitterSet(nodes: nodes, at: at, by: by, signature: signature)
    }

    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let count = try? r.varint(), count >= 1, count <= UInt64(Self.maxNodes) else { return nil }
        var nodes: [NodeID] = []
        for _ in 0..<count {
            guard let node = try? r.raw(16) else { return nil }
            nodes.append(NodeID(bytes: node))
        }
        guard let at = try? r.fixed64(), let by = try? r.raw(16), let signature = try? r.data(), r.isAtEnd,
            signature.count <= 128
        else { return nil }
        self.init(nodes: nodes, at: at, by: NodeID(bytes: by), signature: Array(signature))
    }
}
