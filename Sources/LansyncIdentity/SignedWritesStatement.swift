public import LansyncCore

/// A statement, signed with the cluster authority's key, that every write must be signed by its
/// writer's member from a point on (statement kind 7): what `lansync cluster set signed-writes
/// on` writes on an admitting machine once every member runs protocol 1.14, and what every hello
/// carries on, like a revocation (Docs/SECURITY.md, "Requiring signed writes").
///
/// The point is a cut of every writer the signing machine held: the writes up to it were made
/// before signatures were required (some by replicas that could not sign) and stay, shown as
/// unverified; a later write counts only with a signed run of its member that holds. The cut
/// comes in parts, as a revocation's does (a hello statement is at most 4 KiB); the statement
/// counts once every part is held. Of the complete statements the latest counts (a Lamport
/// stamp, as the settings'); `off` stops requiring signatures, and a later `on` names a new cut.
public struct SignedWritesStatement: SignedStatement, Hashable {
    /// Whether signatures are required from this statement on.
    public let required: Bool
    /// Wall-clock milliseconds when it was made, or one past the stamp of the statement it
    /// replaces (``ClusterStatement/stamp(now:after:)``).
    public let at: UInt64
    /// The admitting machine that made it.
    public let by: NodeID
    /// Which part of the cut this is, of how many.
    public let part: Int
    public let parts: Int
    /// The highest counter kept unsigned of each writer this part names (an `off` statement's
    /// one part names none).
    public let counters: [NodeID: UInt64]
    public let signature: [UInt8]

    /// Writers named in one part: each takes 16 bytes and a counter of up to 10, and a statement
    /// stays within a hello's 4 KiB.
    public static let writersPerPart = 120
    /// At most this many parts (30,720 writers: more than ``WriterBounds``' default lets a
    /// replica hold).
    public static let maxParts = 256

    /// The statement's parts, its cut `held` (what this machine holds of each writer) when
    /// `required`.
    public static func make(
        required: Bool,
        at: UInt64,
        by: NodeID,
        held: VersionVector,
        authority: ClusterSecret
    ) throws -> [SignedWritesStatement] {
        let writers = required ? held.nodes.map { ($0, held[$0]) } : []
        let per = writersPerPart
        let chunks = stride(from: 0, to: max(writers.count, 1), by: per).map {
            Dictionary(uniqueKeysWithValues: writers[$0..<min($0 + per, writers.count)].map { ($0.0, $0.1) })
        }
        guard chunks.count <= maxParts else { throw TooManyWriters(writers: writers.count) }
        return try chunks.enumerated().map { index, counters in
            try SignedWritesStatement(
                required: required,
                at: at,
                by: by,
                part: index,
                parts: chunks.count,
                counters: counters,
                signature: []
            ).signed(with: authority)
        }
    }

    /// More writers than a statement's parts can name.
    public struct TooManyWriters: Error, CustomStringConvertible {
        public let writers: Int
        public var description: String {
            "the replica holds \(writers) writer ids, more than the statement can name (\(maxParts * writersPerPart))"
        }
    }

    init(
        required: Bool,
        at: UInt64,
        by: NodeID,
        part: Int,
        parts: Int,
        counters: [NodeID: UInt64],
        signature: [UInt8]
    ) {
        self.required = required
        self.at = at
        self.by = by
        self.part = part
        self.parts = parts
        self.counters = counters
        self.signature = signature
    }

    /// What the parts of one statement share (on or off, who made it and when).
    public var statementID: [UInt8] {
        var w = ByteWriter()
        w.byte(required ? 1 : 0)
        w.raw(by.bytes)
        w.fixed64(at)
        return w.bytes
    }

    /// Whether this statement is later than `other`: the later stamp, then the larger signer id.
    public func supersedes(_ other: SignedWritesStatement?) -> Bool {
        guard let other else { return true }
        return at != other.at ? at > other.at : other.by < by
    }

    public var label: String { "lansync signed writes 1" }

    public func writeBody(to w: inout ByteWriter) {
        w.byte(required ? 1 : 0)
        w.fixed64(at)
        w.raw(by.bytes)
        w.varint(UInt64(part))
        w.varint(UInt64(parts))
        w.varint(UInt64(counters.count))
        for (writer, counter) in counters.sorted(by: { $0.key < $1.key }) {
            w.raw(writer.bytes)
            w.varint(counter)
        }
    }

    public func replacingSignature(_ signature: [UInt8]) -> SignedWritesStatement {
        SignedWritesStatement(
            required: required,
            at: at,
            by: by,
            part: part,
            parts: parts,
            counters: counters,
            signature: signature
        )
    }

    /// Reads the binary form (inside a ``ClusterStatement``, kind 7); nil for anything else, and
    /// past its bounds (a part, of at most ``maxParts``, naming at most ``writersPerPart``
    /// writers, each once; an `off` statement names none).
    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let flag = try? r.byte(), flag <= 1, let at = try? r.fixed64(), let by = try? r.raw(16),
            let part = try? r.varint(), let parts = try? r.varint(), let count = try? r.varint(),
            parts >= 1, parts <= UInt64(Self.maxParts), part < parts, count <= UInt64(Self.writersPerPart),
            flag == 1 || (count == 0 && parts == 1)
        else { return nil }
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<count {
            // A counter as a version vector's: at most Int64.max, as every store can hold it.
            guard let writer = try? r.raw(16), let counter = try? r.varint(), counter <= UInt64(Int64.max) else {
                return nil
            }
            counters[NodeID(bytes: writer)] = counter
        }
        guard counters.count == Int(count), let signature = try? r.data(), r.isAtEnd, signature.count <= 128 else {
            return nil
        }
        self.init(
            required: flag == 1,
            at: at,
            by: NodeID(bytes: by),
            part: Int(part),
            parts: Int(parts),
            counters: counters,
            signature: Array(signature)
        )
    }
}

extension SignedWritesStatement {
    /// The statement that counts among `statements`: the latest of those whose every part is
    /// held, with its whole cut; nil if none is complete.
    public static func latest(
        _ statements: some Sequence<SignedWritesStatement>
    ) -> (statement: SignedWritesStatement, cut: [NodeID: UInt64])? {
        var parts: [[UInt8]: [Int: SignedWritesStatement]] = [:]
        for statement in statements { parts[statement.statementID, default: [:]][statement.part] = statement }
        var latest: (statement: SignedWritesStatement, cut: [NodeID: UInt64])?
        for held in parts.values {
            guard let first = held.values.first, (0..<first.parts).allSatisfy({ held[$0] != nil }),
                first.supersedes(latest?.statement)
            else { continue }
            var cut: [NodeID: UInt64] = [:]
            for part in held.values { cut.merge(part.counters) { max($0, $1) } }
            latest = (first, cut)
        }
        return latest
    }
}
