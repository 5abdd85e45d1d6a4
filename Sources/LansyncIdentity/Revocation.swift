public import LansyncCore

/// A statement, signed with the cluster authority's key, that a node is no longer a member:
/// what `lansync revoke` writes on an admitting machine, and what every hello carries on
/// (Docs/SECURITY.md, "Revoking a machine").
///
/// Revocations only accumulate (a set: nothing un-revokes a node), so they merge by union in any
/// order. Only the authority can make one: a member that is not an admitting machine, or a
/// stolen laptop, cannot revoke anyone. A node refuses every session with a node it holds a valid
/// revocation for.
public struct Revocation: Sendable, Hashable {
    public let node: NodeID
    /// The name the node was known by, for people.
    public let name: String
    public let reason: String
    /// Wall-clock milliseconds when it was made.
    public let at: UInt64
    /// The admitting node that made it.
    public let by: NodeID
    public let signature: [UInt8]

    /// The longest reason kept (longer ones are cut).
    public static let maxReasonBytes = 256

    /// Makes and signs a revocation with the authority's key.
    public static func make(
        node: NodeID,
        name: String,
        reason: String,
        at: UInt64,
        by: NodeID,
        authority: ClusterSecret
    ) throws -> Revocation {
        let reason = cut(reason, to: maxReasonBytes)
        let name = cut(name, to: 64)
        let message = signedBytes(cluster: authority.clusterID, node: node, name: name, reason: reason, at: at, by: by)
        return Revocation(
            node: node,
            name: name,
            reason: reason,
            at: at,
            by: by,
            signature: try ClusterStatement.sign(message, with: authority)
        )
    }

    /// The longest start of `text` within `bytes` UTF-8 bytes, cut between characters.
    static func cut(_ text: String, to bytes: Int) -> String {
        var kept = ""
        var used = 0
        for character in text {
            used += character.utf8.count
            guard used <= bytes else { break }
            kept.append(character)
        }
        return kept
    }

    init(node: NodeID, name: String, reason: String, at: UInt64, by: NodeID, signature: [UInt8]) {
        self.node = node
        self.name = name
        self.reason = reason
        self.at = at
        self.by = by
        self.signature = signature
    }

    /// True if this cluster's authority signed it.
    public func isSigned(by trust: ClusterCertificate) -> Bool {
        let message = Self.signedBytes(cluster: trust.clusterID, node: node, name: name, reason: reason, at: at, by: by)
        return ClusterStatement.verify(signature, message, by: trust)
    }

    static func signedBytes(
        cluster: NodeID,
        node: NodeID,
        name: String,
        reason: String,
        at: UInt64,
        by: NodeID
    ) -> [UInt8] {
        var w = ByteWriter()
        w.string("lansync revocation 1")
        w.raw(cluster.bytes)
        w.raw(node.bytes)
        w.string(name)
        w.string(reason)
        w.fixed64(at)
        w.raw(by.bytes)
        return w.bytes
    }

    // MARK: - Binary form (inside a ``ClusterStatement``)

    var encoded: [UInt8] {
        var w = ByteWriter()
        w.raw(node.bytes)
        w.string(name)
        w.string(reason)
        w.fixed64(at)
        w.raw(by.bytes)
        w.data(signature)
        return w.bytes
    }

    /// Reads the binary form; nil for anything else (a peer's junk is dropped, not fatal).
    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let node = try? r.raw(16), let name = try? r.string(), let reason = try? r.string(),
            let at = try? r.fixed64(), let by = try? r.raw(16), let signature = try? r.data(), r.isAtEnd,
            name.utf8.count <= 64, reason.utf8.count <= Self.maxReasonBytes, signature.count <= 128
        else { return nil }
        self.init(
            node: NodeID(bytes: node),
            name: name,
            reason: reason,
            at: at,
            by: NodeID(bytes: by),
            signature: Array(signature)
        )
    }
}
