public import LansyncCore

/// A statement, signed with the cluster authority's key, that a machine joined the cluster: what
/// an admitting machine's node writes when it lets a machine in with an invite, and what every
/// hello carries on, so that every member can list every member and who admitted it, not only
/// the machines it met (Docs/SECURITY.md, "Joining with an invite").
///
/// Admissions only accumulate, and a node's first one stays. They grant nothing: a member is a
/// member by its certificate; an admission only says, for people, who let it in and when.
public struct Admission: SignedStatement, Hashable {
    public let node: NodeID
    /// The name the machine joined with.
    public let name: String
    /// Wall-clock milliseconds when it joined.
    public let at: UInt64
    /// The admitting node that let it in.
    public let by: NodeID
    public let signature: [UInt8]

    /// Makes and signs an admission with the authority's key.
    public static func make(
        node: NodeID,
        name: String,
        at: UInt64,
        by: NodeID,
        authority: ClusterSecret
    ) throws
        -> Admission
    {
        try Admission(node: node, name: Revocation.cut(name, to: 64), at: at, by: by, signature: []).signed(
            with: authority
        )
    }

    init(node: NodeID, name: String, at: UInt64, by: NodeID, signature: [UInt8]) {
        self.node = node
        self.name = name
        self.at = at
        self.by = by
        self.signature = signature
    }

    public var label: String { "lansync admission 1" }

    public func writeBody(to w: inout ByteWriter) {
        w.raw(node.bytes)
        w.string(name)
        w.fixed64(at)
        w.raw(by.bytes)
    }

    public func replacingSignature(_ signature: [UInt8]) -> Admission {
        Admission(node: node, name: name, at: at, by: by, signature: signature)
    }

    // MARK: - Binary form (inside a ``ClusterStatement``, kind 4: ``SignedStatement/encoded``)

    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let node = try? r.raw(16), let name = try? r.string(), let at = try? r.fixed64(),
            let by = try? r.raw(16), let signature = try? r.data(), r.isAtEnd,
            name.utf8.count <= 64, signature.count <= 128
        else { return nil }
        self.init(node: NodeID(bytes: node), name: name, at: at, by: NodeID(bytes: by), signature: Array(signature))
    }
}
