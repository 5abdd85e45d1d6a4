public import LansyncCore

/// The cluster's collection settings, signed with the cluster authority's key (kind 5): how long a
/// deleted item stays restorable (the trash window) and how long a member may stay silent before
/// it is marked away (Docs/MERGE.md, "Causal stability and collection"). Made by `lansync cluster
/// set` on an admitting machine and carried by every hello like a revocation, so every member
/// judges restores and away members alike. The latest (by ``at``) counts.
public struct ClusterSettings: SignedStatement, Hashable {
    /// Milliseconds.
    public let trashWindow: UInt64
    /// Milliseconds.
    public let awayAfter: UInt64
    /// Wall-clock milliseconds when it was made; the latest counts.
    public let at: UInt64
    /// The admitting node that made it.
    public let by: NodeID
    public let signature: [UInt8]

    /// Makes and signs the settings with the authority's key.
    public static func make(
        trashWindow: UInt64,
        awayAfter: UInt64,
        at: UInt64,
        by: NodeID,
        authority: ClusterSecret
    ) throws -> ClusterSettings {
        try ClusterSettings(trashWindow: trashWindow, awayAfter: awayAfter, at: at, by: by, signature: [])
            .signed(with: authority)
    }

    init(trashWindow: UInt64, awayAfter: UInt64, at: UInt64, by: NodeID, signature: [UInt8]) {
        self.trashWindow = trashWindow
        self.awayAfter = awayAfter
        self.at = at
        self.by = by
        self.signature = signature
    }

    public var label: String { "lansync settings 1" }

    public func writeBody(to w: inout ByteWriter) {
        w.varint(trashWindow)
        w.varint(awayAfter)
        w.fixed64(at)
        w.raw(by.bytes)
    }

    public func replacingSignature(_ signature: [UInt8]) -> ClusterSettings {
        ClusterSettings(trashWindow: trashWindow, awayAfter: awayAfter, at: at, by: by, signature: signature)
    }

    // MARK: - Binary form (inside a ``ClusterStatement``, kind 5: ``SignedStatement/encoded``)

    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let trashWindow = try? r.varint(), let awayAfter = try? r.varint(), let at = try? r.fixed64(),
            let by = try? r.raw(16), let signature = try? r.data(), r.isAtEnd, signature.count <= 128
        else { return nil }
        self.init(
            trashWindow: trashWindow,
            awayAfter: awayAfter,
            at: at,
            by: NodeID(bytes: by),
            signature: Array(signature)
        )
    }
}
