import LansyncCore
import LansyncIdentity
import LansyncStore
import NIOConcurrencyHelpers

/// The cluster statements a node holds (revocations, and the latest set of admitting machines),
/// in memory for the checks every session makes and in the replica (table `statement`) across
/// restarts. Only statements the cluster's authority signed are ever kept: a peer's forged or
/// damaged ones are dropped.
final class ClusterStatements: Sendable {
    /// What a reading or a peer's hello brought that this node did not hold.
    struct News: Sendable {
        var revocations: [Revocation] = []
        /// A set of admitting machines newer than the one held.
        var admitters: AdmitterSet?
        var isEmpty: Bool { revocations.isEmpty && admitters == nil }
    }

    let store: ReplicaStore
    let io: BlockingIO
    let trust: ClusterCertificate
    private let held = NIOLockedValueBox<(revoked: [NodeID: Revocation], admitters: AdmitterSet?)>(([:], nil))
    /// The binary forms already judged (held, or refused), so that a record is verified once:
    /// every hello and every nudge brings them all again.
    private let seen = NIOLockedValueBox<Set<[UInt8]>>([])

    init(store: ReplicaStore, io: BlockingIO, trust: ClusterCertificate) {
        self.store = store
        self.io = io
        self.trust = trust
    }

    /// The revocation of `node`, if it was revoked.
    func revocation(of node: NodeID) -> Revocation? { held.withLockedValue { $0.revoked[node] } }

    /// The latest set of admitting machines, if one was ever made.
    var admitters: AdmitterSet? { held.withLockedValue { $0.admitters } }

    /// What a hello carries: every revocation, and the latest admitter set.
    var records: [[UInt8]] {
        held.withLockedValue { held in
            held.revoked.values.sorted { $0.node < $1.node }.map { ClusterStatement.revocation($0).encoded }
                + (held.admitters.map { [ClusterStatement.admitters($0).encoded] } ?? [])
        }
    }

    /// Reads what the replica holds (at start, and after `lansync revoke` or `cluster admitters`
    /// nudged the node); returns what is new to this node.
    func reload() async -> News {
        let store = self.store
        guard let records = try? await io.run({ try store.statementRecords() }) else { return News() }
        return adopt(valid(records))
    }

    /// Keeps the valid statements among a peer's, in memory and in the replica; returns the news.
    func learn(_ records: [[UInt8]]) async -> News {
        let statements = valid(records)
        let news = adopt(statements)
        guard !news.isEmpty else { return news }
        let store = self.store
        _ = try? await io.run { try store.addStatements(statements.map { ($0.key, $0.encoded) }) }
        return news
    }

    private func valid(_ records: [[UInt8]]) -> [ClusterStatement] {
        let unseen = seen.withLockedValue { seen in
            records.filter { seen.count < 65_536 ? seen.insert($0).inserted : !seen.contains($0) }
        }
        return unseen.compactMap(ClusterStatement.init(encoded:)).filter { $0.isSigned(by: trust) }
    }

    private func adopt(_ statements: [ClusterStatement]) -> News {
        held.withLockedValue { held in
            var news = News()
            for statement in statements {
                switch statement {
                case .revocation(let revocation):
                    guard held.revoked[revocation.node] == nil else { continue }
                    held.revoked[revocation.node] = revocation
                    news.revocations.append(revocation)
                case .admitters(let set):
                    guard set.at > held.admitters?.at ?? 0 else { continue }
                    held.admitters = set
                    news.admitters = set
                }
            }
            return news
        }
    }
}
