import LansyncCore
import LansyncJSON
import LansyncTestLane
import LansyncTestSupport
import PropertyBased
import Testing

/// Merge is a join: commutative, associative, idempotent, with the unwritten field as identity.
/// The states come from random histories cut short (before the final exchange), so they are
/// states replicas really reach, with siblings, list tags, tombstones and partial knowledge.
@Suite(.computeBound) struct MergeLawTests {
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

    /// A field delta merges exactly like the whole state it was taken from, for any receiver that
    /// has seen what the delta's base says (a replica's own version vector, as a hello announces
    /// it); merging it again changes nothing, and deltas from two senders commute. The histories
    /// replace long lists whole, so removal logs get cut and some receivers fall behind the
    /// horizon (then there is no delta, and the whole state goes).
    @Test func fieldDeltaMergesLikeTheWholeState() async {
        await propertyCheck(
            count: propertyCases(default: 400),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 2...5),
            Gen.int(in: 5...80)
        ) { seed, replicas, steps in
            var history = History(seed: seed, replicaCount: replicas)
            for _ in 0..<steps { history.step() }
            let all = history.replicas
            let keys = Set(
                all.flatMap { r in r.items.values.flatMap { i in i.fields.keys.map { FieldKey(item: i.id, field: $0) } }
                }
            )
            var deltas = 0
            for key in keys.sorted() {
                for receiver in all {
                    let held = receiver.fieldState(key) ?? FieldState()
                    let base = receiver.versionVector
                    let changes = all.compactMap { sender -> (FieldState, FieldDelta)? in
                        guard let state = sender.fieldState(key), let delta = state.delta(since: base) else {
                            return nil
                        }
                        return (state, delta)
                    }
                    for (state, delta) in changes {
                        deltas += 1
                        let viaDelta = held.merged(with: delta)
                        #expect(viaDelta == held.merged(with: state), "delta merge = state merge, \(key), seed \(seed)")
                        #expect(viaDelta.merged(with: delta) == viaDelta, "idempotence, seed \(seed)")
                    }
                    if changes.count >= 2 {
                        let (a, b) = (changes[0].1, changes[1].1)
                        #expect(
                            held.merged(with: a).merged(with: b) == held.merged(with: b).merged(with: a),
                            "deltas commute, seed \(seed)"
                        )
                    }
                }
            }
            _ = deltas
        }
    }

    /// A delta of a long list carries what the receiver lacks, whatever the list's length: one
    /// added tag, or one removal; and a receiver behind the removal log's horizon gets no delta.
    @Test func aListDeltaCarriesOnlyTheEdit() throws {
        let writer = NodeID.node(1)
        var state = FieldState()
        state.assign(
            .list((0..<1000).map { .integer(Int64($0)) }),
            dot: Dot(node: writer, counter: 1),
            timestamp: HLCTimestamp(rawValue: 1)
        )
        var receiver = state
        let base = VersionVector([writer: 1])
        state.changeList(
            .string("new"),
            add: true,
            dot: Dot(node: writer, counter: 2),
            timestamp: HLCTimestamp(rawValue: 2)
        )
        let add = try #require(state.delta(since: base))
        #expect(add.entries.map(\.value) == [.string("new")] && add.removals.isEmpty)
        #expect(add.keptVersions.isEmpty && add.versions.count == 1)
        receiver.merge(add)
        #expect(receiver == state)

        state.changeList(
            .integer(7),
            add: false,
            dot: Dot(node: writer, counter: 3),
            timestamp: HLCTimestamp(rawValue: 3)
        )
        let remove = try #require(state.delta(since: VersionVector([writer: 2])))
        #expect(remove.entries.isEmpty)
        #expect(remove.removals.map(\.tags) == [[ListTag(value: .integer(7), dot: Dot(node: writer, counter: 1))]])
        receiver.merge(remove)
        #expect(receiver == state && !receiver.listValue.contains(.integer(7)))

        // 65 more removals cut the log: a receiver that missed them all gets the whole state.
        for i in 0..<65 {
            state.changeList(
                .integer(Int64(100 + i)),
                add: false,
                dot: Dot(node: writer, counter: UInt64(4 + i)),
                timestamp: HLCTimestamp(rawValue: UInt64(4 + i))
            )
        }
        #expect(state.removals.flatMap(\.tags).count <= Limits.maxLoggedRemovals)
        #expect(state.delta(since: VersionVector([writer: 3])) == nil)
        #expect(state.delta(since: VersionVector([writer: 60])) != nil)
    }
}
