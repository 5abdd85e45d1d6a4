import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Testing

/// Every store implements exactly the merge core's semantics: random histories run in lockstep
/// against in-memory reference replicas and against real stores of each ``StorageKind``, through
/// the protocol the node uses (local edits, and sessions' streams), must show the same items,
/// values, tombstones and conflicts after every step.
@Suite(.computeBound) struct StoreModelTests {
    struct Pair {
        var model: Replica
        let store: any ReplicaStorage
    }

    static func makePairs(_ count: Int, in site: StorageSite) throws -> [Pair] {
        try (1...count).map { n in
            Pair(model: Replica(nodeID: .node(UInt64(n))), store: try site.replica(UInt64(n)))
        }
    }

    /// What users see of a replica, for comparison.
    static func visible(_ store: any ReplicaStorage) throws -> [String] {
        var lines: [String] = []
        try store.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false) { item in
            lines.append(
                "\(item.id) \(item.type) \(item.deleted) \(item.fields.map { "\($0.name)=\($0.value.jsonText)" }) \(item.conflicts.map(\.rawValue))"
            )
        }
        return lines
            + (try store.conflicts()).map {
                "\($0.item).\($0.field) \($0.values) \(String(describing: $0.shown)) \($0.removed)"
            }
    }

    static func visible(_ model: Replica) -> [String] {
        model.views.map { view in
            let fields = view.fields.keys.sorted().map { "\($0.rawValue)=\(view.fields[$0]!.jsonText)" }
            return "\(view.id) \(view.type) \(view.deleted) \(fields) \(view.conflicts.map(\.rawValue))"
        } + model.conflicts.map { "\($0.item).\($0.field) \($0.values) \(String(describing: $0.shown)) \($0.removed)" }
    }

    /// Each kind runs its seeds in one site (for PostgreSQL, one server; each seed's replicas
    /// are schemas of their own). PostgreSQL runs half as many: each statement is a round trip,
    /// 4 s a seed in the debug build beside SQLite's 1.2 s.
    @Test(arguments: StorageKind.all)
    func storeMatchesModel(kind: StorageKind) throws {
        let site = try StorageSite(kind, "model")
        defer { site.close() }
        let seeds = propertyCases(default: 2500) / (kind == .postgres ? 200 : 100)
        for seed in 0..<UInt64(seeds) {
            try Self.check(seed: seed, in: site)
            site.closeReplicas()
        }
    }

    static func check(seed: UInt64, in site: StorageSite) throws {
        var rng = SplitMix64(seed: seed)
        var pairs = try Self.makePairs(Int.random(in: 2...4, using: &rng), in: site)
        var wall: UInt64 = 1_700_000_000_000
        let fields = ["a", "b", "tags"].map(FieldName.named)
        for step in 0..<40 {
            wall += UInt64.random(in: 0...20, using: &rng)
            let r = Int.random(in: 0..<pairs.count, using: &rng)
            if rng.chance(60) {
                let id = ItemID.named("i\(Int.random(in: 0..<4, using: &rng))")
                let exists = pairs[r].model.items[id]?.exists ?? false
                let edit: ItemEdit
                let field = rng.pick(fields)
                let value = EdgeValues.random(using: &rng)
                if !exists {
                    edit = .create(type: rng.pick(["task", "note"]), assignments: [.set(field, value)])
                } else {
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0: edit = .delete
                    case 1: edit = .restore
                    case 2: edit = .resolve(field, value)
                    case 3, 4: edit = .update([.add(.named("tags"), rng.pick(EdgeValues.elements))])
                    case 5: edit = .update([.remove(.named("tags"), rng.pick(EdgeValues.elements))])
                    default: edit = .update([.set(field, value)])
                    }
                }
                let modelResult = Result { () throws(EditError) in
                    try pairs[r].model.apply(edit, to: id, wallMilliseconds: wall)
                }
                let storeResult = Result { () throws(StoreError) in
                    try pairs[r].store.apply(edit, to: id, wallMilliseconds: wall)
                }
                switch (modelResult, storeResult) {
                case (.success, .success): break
                case let (.failure(m), .failure(.edit(s, _))): #expect(m == s, "seed \(seed) step \(step)")
                default: Issue.record("seed \(seed) step \(step): model \(modelResult), store \(storeResult)")
                }
            } else {
                var b = Int.random(in: 0..<pairs.count - 1, using: &rng)
                if b >= r { b += 1 }
                let batchSize = Int.random(in: 1...6, using: &rng)
                // Protocol 1.2 (field deltas against the receiver's vector) or 1.1 (whole states).
                let deltas = rng.chance(70)
                for batch in pairs[r].model.delta(
                    for: pairs[b].model.versionVector,
                    maxUpdates: batchSize,
                    deltaBase: deltas ? pairs[b].model.versionVector : nil
                ) {
                    let merged = pairs[b].model.apply(batch, wallMilliseconds: wall)
                    #expect(merged, "seed \(seed) step \(step): a batch of deltas was refused")
                }
                try syncAsASession(
                    pairs[r].store,
                    pairs[b].store,
                    batchSize: batchSize,
                    deltas: deltas,
                    wallMilliseconds: wall
                )
            }
            for pair in pairs {
                let stored = try Self.visible(pair.store)
                let modelled = Self.visible(pair.model)
                if stored != modelled {
                    Issue.record(
                        "seed \(seed) step \(step): store shows \(stored.filter { !modelled.contains($0) }), model shows \(modelled.filter { !stored.contains($0) })"
                    )
                    return
                }
            }
        }
        for case let store as ReplicaStore in pairs.map(\.store) { #expect(try store.integrityCheck() == "ok") }
    }
}
