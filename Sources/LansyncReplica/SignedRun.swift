import Crypto
public import LansyncCore
import Synchronization

extension SignedRun {
    /// The digest of a run's leaves, in their canonical order (``RunLeaf``'s), each with the dot
    /// and field it is the leaf of.
    public static func root(of leaves: [RunLeaf]) -> [UInt8] {
        var w = ByteWriter()
        w.raw(rootTag)
        for leaf in leaves.sorted() {
            w.varint(leaf.counter)
            w.string(leaf.field.rawValue)
            w.raw(leaf.digest)
        }
        return Array(SHA256.hash(data: w.bytes))
    }
}

extension RunLeaf {
    /// The leaf of `version`, written to field `field` of item `item`.
    public init(item: ItemID, field: FieldName, version: FieldVersion) {
        var w = ByteWriter()
        WriteLeaf.write(item: item, field: field, version: version, to: &w)
        self.init(counter: version.dot.counter, field: field, digest: Array(SHA256.hash(data: w.bytes)))
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
    /// The member's signature over `bytes` (64 bytes); nil if the crypto library failed.
    func sign(_ bytes: [UInt8]) -> [UInt8]?
}

/// The leaves of a transaction's own writes, made into signed runs when it commits: each
/// writer's dots cut into runs of consecutive counters, at most ``SignedRun/maxDots`` each.
package struct RunLog: Sendable {
    private var leaves: [NodeID: [RunLeaf]] = [:]

    package init() {}

    package var isEmpty: Bool { leaves.isEmpty }

    /// Notes the version `dot` wrote to `field` of `item` in `state`, if it holds it.
    package mutating func note(_ dot: Dot, item: ItemID, field: FieldName, in state: FieldState) {
        guard let version = state.versions.first(where: { $0.dot == dot }) else { return }
        leaves[dot.node, default: []].append(RunLeaf(item: item, field: field, version: version))
    }

    /// The runs: per writer, its dots in order, a new run at each gap, and before a dot whose
    /// leaves would take a run past ``SignedRun/maxLeaves`` (a dot is never split) or
    /// ``SignedRun/maxDots``.
    package func runs() -> [(writer: NodeID, first: UInt64, last: UInt64, leaves: [RunLeaf])] {
        var runs: [(writer: NodeID, first: UInt64, last: UInt64, leaves: [RunLeaf])] = []
        for (writer, written) in leaves.sorted(by: { $0.key < $1.key }) {
            // A field saved twice in one transaction has one leaf: its last save's.
            var latest: [RunProofs.LeafKey: RunLeaf] = [:]
            for leaf in written { latest[RunProofs.LeafKey(leaf.counter, leaf.field)] = leaf }
            let sorted = latest.values.sorted()
            var start = sorted.startIndex
            while start < sorted.endIndex {
                let counter = sorted[start].counter
                var end = start
                while end < sorted.endIndex, sorted[end].counter == counter { end += 1 }
                let dot = sorted[start..<end]
                if let run = runs.last, run.writer == writer, counter == run.last &+ 1,
                    run.leaves.count + dot.count <= SignedRun.maxLeaves, counter - run.first < SignedRun.maxDots
                {
                    runs[runs.count - 1].last = counter
                    runs[runs.count - 1].leaves.append(contentsOf: dot)
                } else {
                    runs.append((writer, counter, counter, Array(dot)))
                }
                start = end
            }
        }
        return runs
    }

    /// The runs signed by `signer`, each with its count of leaves; a run it failed to sign is
    /// left out (its writes travel unsigned, as a replica's without a signer do).
    package func signed(by signer: any WriteSigner) -> [(run: SignedRun, leaves: Int)] {
        runs().compactMap { run in
            let bytes = SignedRun.signedBytes(
                cluster: signer.cluster,
                writer: run.writer,
                first: run.first,
                last: run.last,
                root: SignedRun.root(of: run.leaves)
            )
            return signer.sign(bytes).map {
                (
                    SignedRun(
                        writer: run.writer,
                        first: run.first,
                        last: run.last,
                        key: signer.publicKey,
                        signature: $0
                    ), run.leaves.count
                )
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
