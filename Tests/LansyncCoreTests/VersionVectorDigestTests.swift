import LansyncCore
import LansyncTestSupport
import PropertyBased
import Testing

/// A vector's digest, kept up to date as entries rise, never changes what equality and hashing
/// answer: two vectors are equal exactly when their entries are, whatever order of raises and
/// joins built them, and equal vectors hash alike.
@Suite struct VersionVectorDigestTests {
    @Test func equalityAndHashingFollowTheEntries() async {
        await propertyCheck(count: propertyCases(default: 400), input: Gen.uint64(in: 0 ... .max)) { seed in
            var rng = SplitMix64(seed: seed)
            // Few nodes and small counters, so that vectors built apart often come out equal.
            let nodes = (0..<4).map { _ in NodeID(high: rng.next() % 3, low: rng.next() % 3) }
            func built() -> VersionVector {
                var v = VersionVector()
                for _ in 0..<Int.random(in: 0...6, using: &rng) {
                    if rng.chance(30) {
                        v.join(VersionVector([rng.pick(nodes): UInt64.random(in: 0...3, using: &rng)]))
                    } else {
                        v.raise(rng.pick(nodes), to: UInt64.random(in: 0...3, using: &rng))
                    }
                }
                return v
            }
            let (a, b) = (built(), built())
            #expect((a == b) == (a.counters == b.counters), "seed \(seed): \(a) against \(b)")
            if a == b { #expect(a.hashValue == b.hashValue, "seed \(seed)") }
            // Built step by step or at once from the same entries: the same vector.
            #expect(a == VersionVector(a.counters), "seed \(seed)")
            #expect(a.joined(with: b) == VersionVector(a.counters.merging(b.counters, uniquingKeysWith: max)))
        }
    }

    @Test func vectorsThatDifferInOneEntryAreUnequal() {
        let nodes = (1...1_000).map { NodeID(high: 7, low: UInt64($0)) }
        let a = VersionVector(Dictionary(uniqueKeysWithValues: nodes.map { ($0, UInt64(5)) }))
        var b = a
        b.raise(nodes[500], to: 6)
        #expect(a != b)
        #expect(b != VersionVector(a.counters))
        var c = a
        c.raise(nodes[500], to: 6)
        #expect(b == c)
        #expect(b.hashValue == c.hashValue)
    }
}
