public import LansyncCore

/// A statement, signed with the cluster authority's key, that a node is no longer a member:
/// what `lansync revoke` writes on an admitting machine, and what every hello carries on
/// (Docs/SECURITY.md, "Revoking a machine").
///
/// Revocations only accumulate (a set: nothing un-revokes a node), so they merge by union in any
/// order. Only the authority can make one: a member that is not an admitting machine, or a
/// stolen laptop, cannot revoke anyone. A node refuses every session with a node it holds a valid
/// revocation for, and refuses the node's writes beyond the point the revocation names
/// (``cut``).
public struct Revocation: SignedStatement, Hashable {
    public let node: NodeID
    /// The name the node was known by, for people.
    public let name: String
    public let reason: String
    /// Wall-clock milliseconds when it was made.
    public let at: UInt64
    /// The admitting node that made it.
    public let by: NodeID
    /// The point after which the node's writes are refused, or nil for a revocation made by a
    /// node of protocol 1.3, which shuts out sessions only.
    public let cut: Cut?
    public let signature: [UInt8]

    /// The counters, one per writer id of the revoked node (``NodeID/isWriter(of:)``), that the
    /// revoking machine held: the node's writes up to them stay, later ones are refused, and so
    /// are all the writes of a writer not named. A node that rebooted often has many writers, so
    /// a cut may come in several parts, each a signed revocation of its own (a hello statement is
    /// at most 4 KiB); the cut counts once every part is held.
    public struct Cut: Sendable, Hashable {
        public let part: Int
        public let parts: Int
        public let counters: [NodeID: UInt64]
    }

    /// What the parts of one cut share (the node, who made it and when): a cut is whole when
    /// every part with this id is held.
    public var cutID: [UInt8] {
        var w = ByteWriter()
        w.raw(node.bytes)
        w.raw(by.bytes)
        w.fixed64(at)
        return w.bytes
    }

    /// The longest reason kept (longer ones are cut).
    public static let maxReasonBytes = 256
    /// The most writers one part names (about 18 bytes each: a part stays well under 4 KiB).
    public static let writersPerPart = 180
    /// The most parts a cut has (so at most 46,080 writers: a node that rebooted and wrote every
    /// day for over a century).
    public static let maxParts = 256

    /// Makes and signs a revocation of `node` with the authority's key, cutting its writes at
    /// `counters` (what this machine holds of each of its writers): one revocation per part.
    public static func make(
        node: NodeID,
        name: String,
        reason: String,
        at: UInt64,
        by: NodeID,
        keeping counters: [NodeID: UInt64],
        authority: ClusterSecret
    ) throws -> [Revocation] {
        let reason = cut(reason, to: maxReasonBytes)
        let name = cut(name, to: 64)
        return try Cut.parts(of: counters, node: node).map { cut in
            try Revocation(node: node, name: name, reason: reason, at: at, by: by, cut: cut, signature: [])
                .signed(with: authority)
        }
    }

    public struct RevocationTooLarge: Error, CustomStringConvertible {
        public let writers: Int
        public var description: String {
            "the node has \(writers) writer ids, more than a revocation can name (\(maxParts * writersPerPart))"
        }
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

    init(node: NodeID, name: String, reason: String, at: UInt64, by: NodeID, cut: Cut?, signature: [UInt8]) {
        self.node = node
        self.name = name
        self.reason = reason
        self.at = at
        self.by = by
        self.cut = cut
        self.signature = signature
    }

    /// True if this cluster's authority signed it.
    /// The message the authority signs (as ``SignedStatement/signedBytes(cluster:)``), for a
    /// revocation with these fields.
    static func signedBytes(
        cluster: NodeID,
        node: NodeID,
        name: String,
        reason: String,
        at: UInt64,
        by: NodeID,
        cut: Cut?
    ) -> [UInt8] {
        Revocation(node: node, name: name, reason: reason, at: at, by: by, cut: cut, signature: [])
            .signedBytes(cluster: cluster)
    }

    public var label: String { cut == nil ? "lansync revocation 1" : "lansync revocation 2" }

    public func writeBody(to w: inout ByteWriter) {
        w.raw(node.bytes)
        w.string(name)
        w.string(reason)
        w.fixed64(at)
        w.raw(by.bytes)
        if let cut { cut.write(to: &w) }
    }

    public func replacingSignature(_ signature: [UInt8]) -> Revocation {
        Revocation(node: node, name: name, reason: reason, at: at, by: by, cut: cut, signature: signature)
    }

    // MARK: - Binary form (inside a ``ClusterStatement``: kind 1 without a cut, kind 3 with one;
    // ``SignedStatement/encoded``)

    /// Reads the binary form; nil for anything else (a peer's junk is dropped, not fatal).
    init?(encoded bytes: [UInt8], withCut: Bool) {
        var r = ByteReader(bytes)
        guard let nodeBytes = try? r.raw(16), let name = try? r.string(), let reason = try? r.string(),
            let at = try? r.fixed64(), let by = try? r.raw(16),
            name.utf8.count <= 64, reason.utf8.count <= Self.maxReasonBytes
        else { return nil }
        let node = NodeID(bytes: nodeBytes)
        var cut: Cut?
        if withCut {
            guard let read = Cut(reading: &r, node: node) else { return nil }
            cut = read
        }
        guard let signature = try? r.data(), r.isAtEnd, signature.count <= 128 else { return nil }
        self.init(
            node: node,
            name: name,
            reason: reason,
            at: at,
            by: NodeID(bytes: by),
            cut: cut,
            signature: Array(signature)
        )
    }
}

extension Revocation.Cut {
    /// The cut's binary form, as revocations (kind 3) and roles (kind 6) carry it: its part, how
    /// many parts, then each writer's low 64 bits and counter (the high ones are the node's).
    func write(to w: inout ByteWriter) {
        w.varint(UInt64(part))
        w.varint(UInt64(parts))
        w.varint(UInt64(counters.count))
        for (writer, counter) in counters.sorted(by: { $0.key < $1.key }) {
            w.fixed64(writer.low)
            w.varint(counter)
        }
    }

    /// Reads the binary form of a cut of `node`'s writers; nil past its bounds (at most
    /// ``Revocation/maxParts`` parts of ``Revocation/writersPerPart`` writers, each named once).
    init?(reading r: inout ByteReader, node: NodeID) {
        guard let part = try? r.varint(), let parts = try? r.varint(), let count = try? r.varint(),
            parts >= 1, parts <= UInt64(Revocation.maxParts), part < parts,
            count <= UInt64(Revocation.writersPerPart)
        else { return nil }
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<count {
            guard let low = try? r.fixed64(), let counter = try? r.varint() else { return nil }
            counters[NodeID(high: node.high, low: low)] = counter
        }
        guard counters.count == Int(count) else { return nil }
        self.init(part: Int(part), parts: Int(parts), counters: counters)
    }

    /// `counters` (each of `node`'s writers and the counter kept), in parts of at most
    /// ``Revocation/writersPerPart`` writers: at least one part, even with no writer.
    static func parts(
        of counters: [NodeID: UInt64],
        node: NodeID
    ) throws(Revocation.RevocationTooLarge)
        -> [Revocation.Cut]
    {
        let writers = counters.filter { $0.key.isWriter(of: node) && $0.value > 0 }.sorted { $0.key < $1.key }
        let per = Revocation.writersPerPart
        let chunks = stride(from: 0, to: max(writers.count, 1), by: per).map {
            Dictionary(uniqueKeysWithValues: writers[$0..<min($0 + per, writers.count)].map { ($0.key, $0.value) })
        }
        guard chunks.count <= Revocation.maxParts else { throw Revocation.RevocationTooLarge(writers: writers.count) }
        return chunks.enumerated().map { Revocation.Cut(part: $0.offset, parts: chunks.count, counters: $0.element) }
    }
}
