import LansyncCore
import LansyncJSON
import LansyncTestSupport
import PropertyBased
import Testing

/// Merge is a join: commutative, associative, idempotent, with the unwritten field as identity.
/// The states come from random histories cut short (before the final exchange), so they are
/// states replicas really reach, with siblings, list tags, tombstones and partial knowledge.
@Suite struct MergeLawTests {
    @Test func fieldMergeIsAJoin() async {
        await propertyCheck(
            count: propertyCases(default: 600),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 3...7),
            Gen.int(in: 5...60)
        ) { seed, replicas, steps in
            var history = History(seed: seed, replicaCount: replicas)
            for _ in 0..<steps { history.step() }
            var rng = SplitMix64(seed: seed ^ 0x5555)
            let keys = Set(
                history.replicas.flatMap { r in
                    r.items.values.flatMap { item in item.fields.keys.map { FieldKey(item: item.id, field: $0) } }
                }
            )
            for key in keys.sorted() {
                let states = history.replicas.map { $0.fieldState(key) ?? FieldState() }
                let a = rng.pick(states)
                let b = rng.pick(states)
                let c = rng.pick(states)
                #expect(a.merged(with: b) == b.merged(with: a), "commutativity, seed \(seed)")
                #expect(
                    a.merged(with: b).merged(with: c) == a.merged(with: b.merged(with: c)),
                    "associativity, seed \(seed)"
                )
                #expect(a.merged(with: a) == a, "idempotence, seed \(seed)")
                #expect(
                    a.merged(with: FieldState()) == a && FieldState().merged(with: a) == a,
                    "identity, seed \(seed)"
                )
                let ab = a.merged(with: b)
                #expect(ab.merged(with: a) == ab, "absorption, seed \(seed)")
                #expect(ab.context.covers(a.context) && ab.context.covers(b.context), "inflation, seed \(seed)")
                #expect(ab.shownValue == b.merged(with: a).shownValue, "shown value is order independent, seed \(seed)")
            }
        }
    }

    /// Whole deltas, applied in any order and any number of times, give the same state.
    @Test func deltasCommuteAndRepeat() async {
        await propertyCheck(
            count: propertyCases(default: 300),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 3...5),
            Gen.int(in: 5...50)
        ) { seed, replicas, steps in
            var history = History(seed: seed, replicaCount: replicas)
            for _ in 0..<steps { history.step() }
            let target = history.replicas[0]
            let deltas = history.replicas.dropFirst().map { $0.delta(for: VersionVector(), maxUpdates: 1000) }
            var forward = target
            for batch in deltas.joined() { forward.apply(batch, wallMilliseconds: 0) }
            var backward = target
            for batch in deltas.reversed().joined().reversed() { backward.apply(batch, wallMilliseconds: 0) }
            for batch in deltas.joined() { backward.apply(batch, wallMilliseconds: 0) }
            #expect(forward.items == backward.items, "seed \(seed)")
            #expect(forward.versionVector == backward.versionVector, "seed \(seed)")
        }
    }
}
