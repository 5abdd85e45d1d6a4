import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Synchronization
import Testing

@testable import LansyncPostgres

/// What a relay will not take from a peer's batch, overruled in PostgreSQL as in the SQLite
/// store: a change past the relay's limits, and a revoked node's writes after its cut (on arrival,
/// and in what the replica already held when it learned the revocation). Both receivers take the
/// same batches and must show the same items, conflicts, counts and refused writes at every step.
@Suite(.serialized, .computeBound) struct PostgresOverruleTests {
    static let wall: UInt64 = 1_700_000_000_000

    /// How many changes ``refuse`` refused, in every test of the suite.
    static let refused = Mutex(0)

    /// A relay's limits as a test gives them: a string in field `b` longer than three characters,
    /// and a third user field on an item.
    static let refuse: FieldRefusal = { key, merged, held, userFields in
        var reason: String?
        if key.field == .named("b"), case .string(let text)? = merged.shownValue, text.count > 3 {
            reason = "field b holds at most 3 characters"
        } else if held == nil, !key.field.isReserved, try userFields() >= 2 {
            reason = "an item holds at most 2 fields"
        }
        if reason != nil { refused.withLock { $0 += 1 } }
        return reason
    }

    /// The cut the relay signs for `node`: what `held` holds of its writers.
    static func cut(of node: NodeID, held: VersionVector) -> RevokedWriters {
        RevokedWriters([
            .init(
                node: node,
                counters: Dictionary(uniqueKeysWithValues: held.nodes.map { ($0, held[$0]) }),
                reason: "written by revoked node \(node.short) after its revocation: lost"
            )
        ])
    }

    @Test func refusedAndRevokedWritesAreOverruledAsInTheSQLiteStore() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-overrule")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let refuse = Self.refuse
        var revokedSeen = 0
        for seed in 0..<UInt64(max(4, propertyCases(default: 400) / 60)) {
            var rng = SplitMix64(seed: seed)
            let member = try PostgresReplicaTests.sqlite(dir, "\(seed)-member", node: 1)
            let leaving = try PostgresReplicaTests.sqlite(dir, "\(seed)-leaving", node: 3)
            let sqlite = try PostgresReplicaTests.sqlite(dir, "\(seed)-relay", node: 2)
            let pg = try PostgresReplicaTests.replica(server, schema: "overrule_\(seed)", node: 2)
            defer { pg.close() }
            var models = [Replica(nodeID: .node(1)), Replica(nodeID: .node(3))]
            var revoked = RevokedWriters()
            let revokeAt = Int.random(in: 10..<30, using: &rng)
            for step in 0..<40 {
                let wall = Self.wall + UInt64(step)
                if step == revokeAt {
                    // The relay learns the revocation: what it holds past the cut is overruled.
                    revoked = Self.cut(of: .node(3), held: try sqlite.versionVector())
                    let overruled = try sqlite.overruleRevokedWrites(revoked, wallMilliseconds: wall)
                    #expect(try pg.overruleRevokedWrites(revoked, wallMilliseconds: wall) == overruled)
                }
                let who = Int.random(in: 0..<2, using: &rng)
                let (from, model) = who == 0 ? (member, models[0]) : (leaving, models[1])
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<5:
                    let (id, edit) = PostgresReplicaTests.randomEdit(model, using: &rng)
                    _ = try? models[who].apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? from.apply(edit, to: id, wallMilliseconds: wall)
                case 5:
                    // The member and the leaving node meet: the member's batches carry its writes.
                    let (to, other) = who == 0 ? (leaving, 1) : (member, 0)
                    for batch in models[who].delta(for: models[other].versionVector, maxUpdates: 100) {
                        _ = models[other].apply(batch, wallMilliseconds: wall)
                    }
                    let held = try to.versionVector()
                    var stream = try from.deltaStream(for: held, maxUpdates: 3, deltaBase: held)
                    while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: wall) }
                default:
                    // The same batches reach both relays' replicas.
                    let held = try sqlite.versionVector()
                    var stream = try from.deltaStream(
                        for: held,
                        maxUpdates: Int.random(in: 1...4, using: &rng),
                        deltaBase: rng.chance(50) ? held : nil
                    )
                    while let batch = try stream.next() {
                        let changed = try sqlite.apply(batch, wallMilliseconds: wall, refuse: refuse, revoked: revoked)
                        let inPG = try pg.apply(batch, wallMilliseconds: wall, refuse: refuse, revoked: revoked)
                        #expect(inPG == changed, "seed \(seed) step \(step): fields changed")
                    }
                }
                let expected = try PostgresReplicaTests.items { try sqlite.forEachItem(includeDeleted: true, $0) }
                let got = try PostgresReplicaTests.items {
                    try pg.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0)
                }
                guard got == expected else {
                    Issue.record("seed \(seed) step \(step): in PostgreSQL \(got), in SQLite \(expected)")
                    return
                }
                #expect(
                    try pg.conflicts().map(\.values) == sqlite.conflicts().map(\.values),
                    "seed \(seed) step \(step)"
                )
                #expect(try pg.counts() == sqlite.counts(), "seed \(seed) step \(step)")
                // Newest first by counter; rows of one counter in either order.
                func listed(_ rejections: [Rejection]) -> [String] {
                    rejections.map { "\($0.item.rawValue) \($0.field.rawValue) \($0.counter) \($0.reason)" }.sorted()
                }
                let rejections = try sqlite.revokedWriteRejections(limit: 1_000)
                #expect(
                    listed(try pg.revokedWriteRejections(limit: 1_000)) == listed(rejections),
                    "seed \(seed) step \(step)"
                )
                revokedSeen = max(revokedSeen, rejections.count)
            }
        }
        // The runs did what they are about: limits refused changes, revocations overruled writes.
        #expect(Self.refused.withLock { $0 } > 0)
        #expect(revokedSeen > 0)
    }
}
