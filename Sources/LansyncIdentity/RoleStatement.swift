public import LansyncCore

/// What a member may do in the cluster, as `lansync members role` sets it (Docs/SECURITY.md,
/// "Roles"). Every member is a writer until a role statement says otherwise.
public enum MemberRole: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Receives everything; its writes are refused by every member (overruled wherever they
    /// arrive, as a revoked machine's are), and its own node refuses to make any.
    case reader = 1
    /// Reads and writes: every member's role until one is set.
    case writer = 2
    /// A writer that the set of admitting machines names: it may hold the authority's key.
    case admitter = 3

    public var description: String {
        switch self {
        case .reader: "reader"
        case .writer: "writer"
        case .admitter: "admitter"
        }
    }

    /// The role with its article, for sentences ("a reader", "an admitter").
    public var withArticle: String { self == .admitter ? "an admitter" : "a \(description)" }

    public init?(name: String) {
        guard let role = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = role
    }
}

/// A statement, signed with the cluster authority's key, of one member's role (statement kind 6):
/// what `lansync members role NAME reader|writer|admitter` writes on an admitting machine, and
/// what every hello carries on, like a revocation.
///
/// Of a member's role statements the latest counts (its stamp is a Lamport clock, as the
/// settings'; between equal stamps the larger signer id). A statement making a member a reader
/// carries a write cut, as a revocation does (``Revocation/Cut``, in parts): what the signing
/// machine held of each of the member's writers. Its writes up to the cut stay; later ones are
/// refused for good, whatever role it is given later (its node takes a new writer when it may
/// write again). A writer the cut does not name is refused while the member is a reader.
public struct RoleStatement: SignedStatement, Hashable {
    public let node: NodeID
    /// The name the member was known by, for people.
    public let name: String
    public let role: MemberRole
    /// Wall-clock milliseconds when it was made, or one past the stamp of the statement it
    /// replaces (``ClusterStatement/stamp(now:after:)``).
    public let at: UInt64
    /// The admitting machine that made it.
    public let by: NodeID
    /// One part of the cut (a reader's); a writer's or admitter's statement has one empty part.
    public let cut: Revocation.Cut
    public let signature: [UInt8]

    /// Makes and signs the statement that `node` has `role`, cutting a reader's writes at
    /// `counters` (what this machine holds of each of its writers): one statement per part.
    public static func make(
        node: NodeID,
        name: String,
        role: MemberRole,
        at: UInt64,
        by: NodeID,
        keeping counters: [NodeID: UInt64],
        authority: ClusterSecret
    ) throws -> [RoleStatement] {
        let name = Revocation.cut(name, to: 64)
        let cuts = try Revocation.Cut.parts(of: role == .reader ? counters : [:], node: node)
        return try cuts.map { cut in
            try RoleStatement(node: node, name: name, role: role, at: at, by: by, cut: cut, signature: [])
                .signed(with: authority)
        }
    }

    init(node: NodeID, name: String, role: MemberRole, at: UInt64, by: NodeID, cut: Revocation.Cut, signature: [UInt8])
    {
        self.node = node
        self.name = name
        self.role = role
        self.at = at
        self.by = by
        self.cut = cut
        self.signature = signature
    }

    /// What the parts of one statement share (the member, the role, who made it and when): it
    /// counts once every part with this id is held. The role is part of it, so two statements
    /// one machine stamped alike stay apart.
    public var statementID: [UInt8] {
        var w = ByteWriter()
        w.raw(node.bytes)
        w.byte(role.rawValue)
        w.raw(by.bytes)
        w.fixed64(at)
        return w.bytes
    }

    /// Whether this statement (one part of it) is later than `other`: the later stamp, then the
    /// larger signer id, so every member takes the same one as latest whatever the order it
    /// heard them in.
    public func supersedes(_ other: RoleStatement?) -> Bool {
        guard let other else { return true }
        return at != other.at ? at > other.at : other.by < by
    }

    public var label: String { "lansync role 1" }

    public func writeBody(to w: inout ByteWriter) {
        w.raw(node.bytes)
        w.string(name)
        w.byte(role.rawValue)
        w.fixed64(at)
        w.raw(by.bytes)
        cut.write(to: &w)
    }

    public func replacingSignature(_ signature: [UInt8]) -> RoleStatement {
        RoleStatement(node: node, name: name, role: role, at: at, by: by, cut: cut, signature: signature)
    }

    /// Reads the binary form (inside a ``ClusterStatement``, kind 6); nil for anything else.
    init?(encoded bytes: [UInt8]) {
        var r = ByteReader(bytes)
        guard let nodeBytes = try? r.raw(16), let name = try? r.string(), name.utf8.count <= 64,
            let roleByte = try? r.byte(), let role = MemberRole(rawValue: roleByte),
            let at = try? r.fixed64(), let by = try? r.raw(16)
        else { return nil }
        let node = NodeID(bytes: nodeBytes)
        guard let cut = Revocation.Cut(reading: &r, node: node), role == .reader || cut.counters.isEmpty,
            let signature = try? r.data(), r.isAtEnd, signature.count <= 128
        else { return nil }
        self.init(
            node: node,
            name: name,
            role: role,
            at: at,
            by: NodeID(bytes: by),
            cut: cut,
            signature: Array(signature)
        )
    }
}

extension RoleStatement {
    /// Each member's reader cuts, from every complete reader statement among `statements` (a
    /// statement counts once each of its parts is there), joined by the largest counter per
    /// writer, as two revocations' cuts are: every member that holds the same statements
    /// refuses the same writes, whatever order it took them in. A member that was never a
    /// reader has no entry; one whose cut names no writer has an empty one.
    public static func readerCuts(_ statements: some Sequence<RoleStatement>) -> [NodeID: [NodeID: UInt64]] {
        var parts: [[UInt8]: [Int: RoleStatement]] = [:]
        for statement in statements where statement.role == .reader {
            parts[statement.statementID, default: [:]][statement.cut.part] = statement
        }
        var cuts: [NodeID: [NodeID: UInt64]] = [:]
        for held in parts.values {
            guard let first = held.values.first, (0..<first.cut.parts).allSatisfy({ held[$0] != nil }) else {
                continue
            }
            for part in held.values { cuts[first.node, default: [:]].merge(part.cut.counters) { max($0, $1) } }
        }
        return cuts
    }
}
