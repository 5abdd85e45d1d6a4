public import LansyncCore

/// The cluster's collection settings, signed with the cluster authority's key (kind 5): how long a
/// deleted item stays restorable (the trash window) and how long a member may stay silent before
/// it is marked away (Docs/MERGE.md, "Causal stability and collection"). Made by `lansync cluster
/// set` on an admitting machine and carried by every hello like a revocation, so every member
/// judges restores and away members alike. The latest counts (``supersedes(_:)``): ``at`` is a
/// Lamport stamp (``ClusterStatement/stamp(now:after:)``), so a signer's slow clock cannot put
/// new settings behind the ones they replace.
public struct ClusterSettings: SignedStatement, Hashable {
    /// Milliseconds.
    public let trashWindow: UInt64
    /// Milliseconds.
    public let awayAfter: UInt64
    /// Wall-clock milliseconds when it was made, or just past the settings it replaced if the
    /// signer's clock was behind them (``ClusterStatement/stamp(now:after:)``); the latest counts.
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

    /// Whether these settings count instead of `other` (``ClusterStatement/supersedes(_:_:_:_:)``).
    public func supersedes(_ other: ClusterSettings?) -> Bool {
        guard let other else { return true }
        return ClusterStatement.supersedes(at, signature, other.at, other.signature)
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

    /// The longest window `lansync cluster set` takes (100 years), and the shortest away window
    /// (a minute): settings outside them are not read, whoever signed them, since the windows
    /// meet sums that would wrap near 2^64 (issue 62).
    public static let maxWindow: UInt64 = 36_500 * 86_400_000
    public static let minAwayAfter: UInt64 = 60_000

    // MARK: - Binary form (inside a ``ClusterStatement``, kind 5: ``SignedStatement/encoded``)

    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let trashWindow = try? r.varint(), let awayAfter = try? r.varint(), let at = try? r.fixed64(),
            let by = try? r.raw(16), let signature = try? r.data(), r.isAtEnd, signature.count <= 128,
            trashWindow <= Self.maxWindow, (Self.minAwayAfter...Self.maxWindow).contains(awayAfter)
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
