import Crypto
public import LansyncCore
import Synchronization

extension SignedRun {
    /// The digest of a run's leaves, in their canonical order (``RunLeaf``'s), each with the dot
    /// and field it is the leaf of.
    public static func root(of leaves: [RunLeaf]) -> [UInt8] { root(ofCanonical: RunLeaf.canonical(leaves)) }

    /// ``root(of:)`` of leaves already in their canonical order.
    public static func root(ofCanonical leaves: [RunLeaf]) -> [UInt8] {
        var w = ByteWriter()
        w.raw(rootTag)
        for leaf in leaves {
            w.varint(leaf.counter)
            w.string(leaf.field.rawValue)
            leaf.digest.write(to: &w)
        }
        return Array(sha256(w.bytes))
    }
}

extension RunLeaf {
    /// The leaf of `version`, written to field `field` of item `item`.
    public init(item: ItemID, field: FieldName, version: FieldVersion) {
        var w = ByteWriter()
        self.init(item: item, field: field, version: version, buffer: &w)
    }

    /// The leaf of `version`, its bytes written in `buffer` (emptied first: one buffer serves a
    /// batch's leaves).
    public init(item: ItemID, field: FieldName, version: FieldVersion, buffer w: inout ByteWriter) {
        w.reset()
        WriteLeaf.write(item: item, field: field, version: version, to: &w)
        let digest = sha256(w.bytes).withUnsafeBytes { LeafDigest(digest: $0) }
        self.init(counter: version.dot.counter, field: field, digest: digest)
    }
}

/// Signs a replica's own writes as they are committed: the member's key, and the cluster the
/// signatures are for. The host gives a store one (``RunLog``); a store without one writes
/// unsigned, as every replica did before protocol 1.14.
public protocol WriteSigner: Sendable {
    /// The cluster a signature is for (signed with it, so it counts in no other).
    var cluster: NodeID { get }
    /// The member's public key, compressed (33 bytes).
    var publicKey: [UInt8] { get }
    /// The certificate the cluster's authority issued for the key (DER): sent with the member's
    /// runs, so a receiver knows the key is a member's (empty: none, and its runs hold nowhere).
    var certificate: [UInt8] { get }
    /// The member's signature over `bytes` (64 bytes); nil if the crypto library failed.
    func sign(_ bytes: [UInt8]) -> [UInt8]?
}

/// The leaves of a transaction's own writes, made into signed runs when it commits: each
/// writer's dots cut into runs of consecutive counters, at most ``SignedRun/maxDots`` each.
package struct RunLog: Sendable {
    /// The leaves not yet in a run cut whole, by writer.
    private var leaves: [NodeID: [RunLeaf]] = [:]
    /// Runs cut whole, their roots made and their leaves let go: an import's million leaves are
    /// not all held until it commits.
    private var cut: [Cut] = []
    /// Whether the leaves come in order (a writer's dots ascending, each dot's fields at once),
    /// as local edits' do: then runs are cut as they fill. (A merge's own writes may come in any
    /// order, and are few: they are cut when the transaction ends.)
    private let ordered: Bool
    /// Where each leaf's bytes are written before they are hashed.
    private var buffer = ByteWriter()

    /// A run cut whole: its writer, dots, root and count of leaves.
    package typealias Cut = (writer: NodeID, first: UInt64, last: UInt64, root: [UInt8], leaves: Int)

    package init(ordered: Bool = false) { self.ordered = ordered }

    package var isEmpty: Bool { leaves.isEmpty && cut.isEmpty }

    /// Notes the version `dot` wrote to `field` of `item` in `state`, if it holds it.
    package mutating func note(_ dot: Dot, item: ItemID, field: FieldName, in state: FieldState) {
        guard let version = state.versions.first(where: { $0.dot == dot }) else { return }
        leaves[dot.node, default: []].append(RunLeaf(item: item, field: field, version: version, buffer: &buffer))
        if ordered, let pending = leaves[dot.node], pending.count >= 2 * SignedRun.maxLeaves {
            // Every run but the last is whole: later leaves join the last one or start another.
            var runs = Self.runs(of: pending)
            guard let open = runs.popLast() else { return }
            cut += runs.map { (dot.node, $0.first, $0.last, SignedRun.root(ofCanonical: $0.leaves), $0.leaves.count) }
            leaves[dot.node] = open.leaves
        }
    }

    /// The runs: per writer, its dots in order, a new run at each gap, and before a dot whose
    /// leaves would take a run past ``SignedRun/maxLeaves`` (a dot is never split) or
    /// ``SignedRun/maxDots``.
    package func runs() -> [Cut] {
        cut
            + leaves.sorted(by: { $0.key < $1.key }).flatMap { writer, written in
                Self.runs(of: written).map {
                    (writer, $0.first, $0.last, SignedRun.root(ofCanonical: $0.leaves), $0.leaves.count)
                }
            }
    }

    /// One writer's `written` leaves cut into runs, each with its leaves in canonical order. A
    /// field saved twice has one leaf: its last save's (the sort is stable).
    static func runs(of written: [RunLeaf]) -> [(first: UInt64, last: UInt64, leaves: [RunLeaf])] {
        var sorted: [RunLeaf] = []
        sorted.reserveCapacity(written.count)
        for leaf in RunLeaf.canonical(written) {
            if let previous = sorted.last, RunLeaf.samePlace(previous, leaf) {
                sorted[sorted.count - 1] = leaf
            } else {
                sorted.append(leaf)
            }
        }
        var runs: [(first: UInt64, last: UInt64, leaves: [RunLeaf])] = []
        var start = sorted.startIndex
        while start < sorted.endIndex {
            let counter = sorted[start].counter
            var end = start
            while end < sorted.endIndex, sorted[end].counter == counter { end += 1 }
            let dot = sorted[start..<end]
            if let run = runs.last, counter == run.last &+ 1, run.leaves.count + dot.count <= SignedRun.maxLeaves,
                counter - run.first < SignedRun.maxDots
            {
                runs[runs.count - 1].last = counter
                runs[runs.count - 1].leaves.append(contentsOf: dot)
            } else {
                runs.append((counter, counter, Array(dot)))
            }
            start = end
        }
        return runs
    }

    /// The runs signed by `signer`, each with its count of leaves; a run it failed to sign is
    /// left out (its writes travel unsigned, as a replica's without a signer do).
    package func signed(by signer: any WriteSigner) -> [(run: SignedRun, leaves: Int)] {
        signed(runs(), by: signer)
    }

    /// `runs` (this log's ``runs()``) signed by `signer`, as ``signed(by:)``.
    package func signed(_ runs: [Cut], by signer: any WriteSigner) -> [(run: SignedRun, leaves: Int)] {
        runs.compactMap { run in
            let bytes = SignedRun.signedBytes(
                cluster: signer.cluster,
                writer: run.writer,
                first: run.first,
                last: run.last,
                root: run.root
            )
            return signer.sign(bytes).map {
                let signed = SignedRun(
                    writer: run.writer,
                    first: run.first,
                    last: run.last,
                    key: signer.publicKey,
                    signature: $0
                )
                return (signed, run.leaves)
            }
        }
    }
}

/// The signer a store signs its own writes with: none until the host gives it the member's key
/// (``use(_:)``), and replaced when the directory takes a new identity. The host may give a way
/// to load the key instead, so that a command that only reads never loads it.
public final class WriteSigning: Sendable {
    private enum Slot {
        case none
        case loaded(any WriteSigner)
        case loader(@Sendable () -> (any WriteSigner)?)
    }

    private let slot = Mutex<Slot>(.none)

    public init() {}

    /// The signer now (nil: writes are unsigned), loaded on first use.
    public var current: (any WriteSigner)? {
        slot.withLock { slot in
            switch slot {
            case .none: return nil
            case .loaded(let signer): return signer
            case .loader(let load):
                guard let signer = load() else {
                    slot = .none
                    return nil
                }
                slot = .loaded(signer)
                return signer
            }
        }
    }

    /// Signs the store's writes from now on with `signer`.
    public func use(_ signer: (any WriteSigner)?) { slot.withLock { $0 = signer.map { .loaded($0) } ?? .none } }

    /// Signs the store's writes from now on with what `load` gives, loaded at the first write.
    public func use(loading load: @escaping @Sendable () -> (any WriteSigner)?) { slot.withLock { $0 = .loader(load) } }
}

/// SHA-256 of `bytes`, fed as one buffer (the generic `hash(data:)` walks a collection's regions).
func sha256(_ bytes: [UInt8]) -> SHA256.Digest {
    var hash = SHA256()
    bytes.withUnsafeBytes { hash.update(bufferPointer: $0) }
    return hash.finalize()
}

extension SignedRun {
    /// Whether the run's signature holds over `leaves` (in any order) for `cluster`, with the
    /// key it names: what a sender checks before it sends a proof it had to piece together
    /// (``RunProofs``). Whose key it is, the receiver checks (``RunCheck``).
    public func holds(_ leaves: [RunLeaf], cluster: NodeID) -> Bool {
        guard key.count == 33, signature.count == 64,
            let publicKey = try? P256.Signing.PublicKey(compressedRepresentation: key),
            let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return publicKey.isValidSignature(parsed, for: signedBytes(cluster: cluster, root: SignedRun.root(of: leaves)))
    }
}
