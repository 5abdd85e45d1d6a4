import LansyncCore
import LansyncIdentity
import LansyncStore
import NIOConcurrencyHelpers

/// The revocations a node holds, kept in memory for the checks every session makes, and in the
/// replica (table `revocation`) across restarts. Only revocations the cluster's authority signed
/// are ever kept: a peer's forged or damaged ones are dropped.
final class RevocationSet: Sendable {
    let store: ReplicaStore
    let io: BlockingIO
    let trust: ClusterCertificate
    private let known = NIOLockedValueBox<[NodeID: Revocation]>([:])

    init(store: ReplicaStore, io: BlockingIO, trust: ClusterCertificate) {
        self.store = store
        self.io = io
        self.trust = trust
    }

    /// The revocation of `node`, if it was revoked.
    func revocation(of node: NodeID) -> Revocation? { known.withLockedValue { $0[node] } }

    /// Every revocation held, in the form a hello carries.
    var records: [[UInt8]] { known.withLockedValue { $0.values.sorted { $0.node < $1.node }.map(\.encoded) } }

    /// Reads what the replica holds (at start, and after `lansync revoke` nudged the node);
    /// returns the revocations that are new to this set.
    func reload() async -> [Revocation] {
        let store = self.store
        guard let records = try? await io.run({ try store.revocationRecords() }) else { return [] }
        return adopt(records.compactMap(Revocation.init(encoded:)).filter { $0.isSigned(by: trust) })
    }

    /// Keeps the valid revocations among a peer's, in memory and in the replica; returns the new ones.
    func learn(_ records: [[UInt8]]) async -> [Revocation] {
        let valid = records.compactMap(Revocation.init(encoded:)).filter { $0.isSigned(by: trust) }
        let new = valid.filter { revocation(of: $0.node) == nil }
        guard !new.isEmpty else { return [] }
        let store = self.store
        _ = try? await io.run { try store.addRevocations(new.map { ($0.node, $0.encoded) }) }
        return adopt(new)
    }

    private func adopt(_ revocations: [Revocation]) -> [Revocation] {
        known.withLockedValue { known in
            revocations.filter { revocation in
                guard known[revocation.node] == nil else { return false }
                known[revocation.node] = revocation
                return true
            }
        }
    }
}
