/// A run of one writer's dots, `first...last`, signed by the member the writer belongs to
/// (Docs/SECURITY.md, "Signed writes"; issue 64): the signature covers the digest of every field
/// version those dots wrote (``RunLeaf``), so whoever holds any of them, first-hand or passed on,
/// can show that the writer's member wrote exactly that.
///
/// One signature covers up to ``maxLeaves`` field versions: a signature a version would cost
/// 64 bytes and tens of microseconds each (an import of 100,000 items writes a million versions),
/// while a run costs one. A run never holds more leaves than a batch holds field states, so a
/// delta can send a run whole (``DeltaPlanner``).
public struct SignedRun: Hashable, Sendable {
    public let writer: NodeID
    public let first: UInt64
    public let last: UInt64
    /// The member's public key, compressed (33 bytes): its fingerprint is the member's node id,
    /// whose first 64 bits every writer id of the member starts with.
    public let key: [UInt8]
    /// ECDSA P-256 over ``signedBytes(cluster:root:)``: 64 bytes, r then s.
    public let signature: [UInt8]

    public init(writer: NodeID, first: UInt64, last: UInt64, key: [UInt8], signature: [UInt8]) {
        self.writer = writer
        self.first = first
        self.last = last
        self.key = key
        self.signature = signature
    }

    /// At most this many field versions a run (one dot may write more: up to
    /// ``Limits/maxFieldsPerItem`` and the reserved fields, a run of that dot alone).
    public static let maxLeaves = 512
    /// At most this many dots a run.
    public static let maxDots: UInt64 = 512

    /// True if the run names a range a run may have: `first...last`, 1-based, at most
    /// ``maxDots`` long, a key and a signature of their sizes.
    public var isWellFormed: Bool {
        first >= 1 && last >= first && last - first < Self.maxDots && key.count == 33 && signature.count == 64
    }

    /// Whether `counter` is one of the run's dots.
    public func contains(_ counter: UInt64) -> Bool { first <= counter && counter <= last }

    /// What the member signs: the cluster, the writer, the range and the root (the digest of the
    /// run's leaves, in their order).
    public static func signedBytes(
        cluster: NodeID,
        writer: NodeID,
        first: UInt64,
        last: UInt64,
        root: [UInt8]
    ) -> [UInt8] {
        var w = ByteWriter()
        w.raw(signedTag)
        w.nodeID(cluster)
        w.nodeID(writer)
        w.varint(first)
        w.varint(last)
        w.raw(root)
        return w.bytes
    }

    /// ``signedBytes(cluster:writer:first:last:root:)`` of this run.
    public func signedBytes(cluster: NodeID, root: [UInt8]) -> [UInt8] {
        Self.signedBytes(cluster: cluster, writer: writer, first: first, last: last, root: root)
    }

    /// What the digest of a run's leaves starts with.
    public static let rootTag: [UInt8] = Array("lansync run leaves 1\0".utf8)
    static let signedTag: [UInt8] = Array("lansync signed run 1\0".utf8)
}

/// One field version a run's dot wrote, as its run's signature covers it: the dot's counter, the
/// field, and the SHA-256 of ``WriteLeaf``'s bytes. Ordered by counter, then by the field name's
/// UTF-8 bytes (the same on every machine).
public struct RunLeaf: Hashable, Sendable, Comparable {
    public let counter: UInt64
    public let field: FieldName
    public let digest: LeafDigest

    public init(counter: UInt64, field: FieldName, digest: LeafDigest) {
        self.counter = counter
        self.field = field
        self.digest = digest
    }

    /// A leaf whose digest is `bytes`; nil unless they are 32.
    public init?(counter: UInt64, field: FieldName, digestBytes bytes: some Collection<UInt8>) {
        guard let digest = LeafDigest(bytes: bytes) else { return nil }
        self.init(counter: counter, field: field, digest: digest)
    }

    public static func < (lhs: RunLeaf, rhs: RunLeaf) -> Bool {
        lhs.counter != rhs.counter
            ? lhs.counter < rhs.counter : lhs.field.rawValue.utf8.lexicographicallyPrecedes(rhs.field.rawValue.utf8)
    }

    /// True if `lhs` and `rhs` are leaves of one dot and field (the same place in a run).
    public static func samePlace(_ lhs: RunLeaf, _ rhs: RunLeaf) -> Bool {
        lhs.counter == rhs.counter && lhs.field == rhs.field
    }

    /// `leaves` in their canonical order: as they are if they are in it already (a
    /// transaction's own writes, a batch's versions mostly are), else sorted (stably).
    public static func canonical(_ leaves: [RunLeaf]) -> [RunLeaf] {
        var index = leaves.startIndex
        while index + 1 < leaves.endIndex, !(leaves[index + 1] < leaves[index]) { index += 1 }
        return index + 1 >= leaves.endIndex ? leaves : leaves.sorted()
    }
}

/// A SHA-256 digest held in place (no allocation, unlike an array of its bytes): a million of
/// them, an import's leaves, are sorted and hashed.
public struct LeafDigest: Hashable, Sendable {
    let a: UInt64, b: UInt64, c: UInt64, d: UInt64

    /// The digest whose bytes are `bytes`; nil unless they are 32.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        var words = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        for (i, byte) in bytes.enumerated() {
            switch i / 8 {
            case 0: words.0 = words.0 << 8 | UInt64(byte)
            case 1: words.1 = words.1 << 8 | UInt64(byte)
            case 2: words.2 = words.2 << 8 | UInt64(byte)
            default: words.3 = words.3 << 8 | UInt64(byte)
            }
        }
        (a, b, c, d) = words
    }

    /// The digest of 32 bytes in memory (a hash function's output).
    public init(digest raw: UnsafeRawBufferPointer) {
        func word(_ n: Int) -> UInt64 {
            raw.count >= 8 * (n + 1) ? UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8 * n, as: UInt64.self)) : 0
        }
        (a, b, c, d) = (word(0), word(1), word(2), word(3))
    }

    /// The digest's 32 bytes.
    public var bytes: [UInt8] {
        var w = ByteWriter()
        write(to: &w)
        return w.bytes
    }

    /// Appends the digest's 32 bytes to `w`.
    public func write(to w: inout ByteWriter) {
        w.bigEndian(a)
        w.bigEndian(b)
        w.bigEndian(c)
        w.bigEndian(d)
    }
}

/// A signed run as a batch carries it: the run, and the leaves of its dots that the batch's field
/// states do not hold (versions superseded since, or fields the receiver has), so the receiver
/// can rebuild the run's root from the batch and these (Docs/PROTOCOL.md, "Signed writes").
public struct RunProof: Hashable, Sendable {
    public let run: SignedRun
    public let leaves: [RunLeaf]
    /// How many leaves the run has in all, once a receiver checked it (the batch's and the
    /// proof's): kept with the run, so a replica can tell when it can no longer make its proof
    /// whole. Not sent.
    public var total: Int
    /// The certificate (DER) the cluster's authority issued for the run's key: what binds the key,
    /// and so the writer, to a member (Docs/SECURITY.md, "Signed writes"). A batch carries it
    /// with the first proof of each key; nil on the others, and where the sender holds none.
    public var certificate: [UInt8]?

    /// At most this many bytes a certificate (a member's is about 500).
    public static let maxCertificateBytes = 4096

    public init(run: SignedRun, leaves: [RunLeaf], total: Int? = nil, certificate: [UInt8]? = nil) {
        self.run = run
        self.leaves = leaves
        self.total = total ?? leaves.count
        self.certificate = certificate
    }
}

/// The bytes a writer's member signs for one field version it wrote (Docs/SECURITY.md, "Signed
/// writes"): the item, the field, and the version whole (its dot, timestamp and write), in one
/// canonical encoding that never changes with how a state is stored or sent.
///
/// An edit is one dot, and it may write several fields of its item (a create writes them all), so
/// a dot has one leaf per field it wrote; a field state holds each of its versions whole, so a
/// receiver rebuilds the leaf of every version it is sent from the version itself.
public enum WriteLeaf {
    /// The leaf's bytes (hashed, never sent), appended to `w`.
    public static func write(item: ItemID, field: FieldName, version: FieldVersion, to w: inout ByteWriter) {
        w.raw(tag)
        w.string(item.rawValue)
        w.string(field.rawValue)
        w.dot(version.dot)
        w.varint(version.timestamp.rawValue)
        var form = AbsoluteForm()
        FieldStateCodec.write(version.write, to: &w, form: &form)
    }

    /// Sets these bytes apart from every other signed message.
    static let tag: [UInt8] = Array("lansync write 1\0".utf8)
}
