import Foundation
import LansyncCore
import LansyncNode
import LansyncPostgres
import LansyncReplica
import LansyncStore
import Logging

/// The gate of a relay that shares the authority with others (`lansync relay --authority`): the
/// node's ``SettlingGate`` over a ``PostgresAuthority``.
enum SharedAuthority {
    static func gate(
        location: PostgresLocation,
        lease: Duration,
        logger: Logger
    ) -> @Sendable (ReplicaInfo) -> SettlingGate {
        { info in
            let authority = PostgresAuthority(
                location: location,
                // One lease per cluster, so clusters may share a database.
                name: "settle \(info.clusterID.text)",
                // A new text per start: a restarted relay never takes over its previous life's epoch.
                holder: "\(info.nodeName) \(info.nodeID.short) pid \(ProcessInfo.processInfo.processIdentifier) "
                    + String(UInt32.random(in: .min ... .max), radix: 16),
                lease: lease,
                logger: logger
            )
            return SettlingGate(
                keep: { acquired in await authority.run(acquired: acquired) },
                holds: { await authority.holds },
                decide: { conflict, proposed in
                    try await authority.decide(
                        PostgresAuthority.Conflict(
                            item: conflict.item,
                            field: conflict.field,
                            dots: conflict.versions.map(\.dot),
                            proposed: proposed
                        )
                    )
                },
                standing: { await Self.standing(of: authority) },
                forget: { milliseconds in
                    try await authority.forget(settledBefore: .milliseconds(Int64(clamping: milliseconds)))
                }
            )
        }
    }

    /// The node's words for where `authority` stands: a holder whose lease ran out before it
    /// renewed it is `lapsed`, not `holding`, since it settles nothing meanwhile.
    static func standing(of authority: PostgresAuthority) async -> SettlingStanding {
        switch await authority.standing {
        case .starting: .starting
        case .holding(let epoch): await authority.holds ? .holding(epoch: epoch) : .lapsed(epoch: epoch)
        case .following(let holder, let epoch): .following(holder: holder, epoch: epoch)
        case .unreachable(let why): .unreachable(why)
        }
    }
}
