import LansyncCore
import LansyncTestSupport
import PropertyBased
import Testing

/// ``SmallSet`` and `hasNoRepeats` answer as `Set` does, on either side of the size where they
/// change from a linear search to hashing.
@Suite struct SmallSetTests {
    @Test func answersAsASetDoes() async {
        await propertyCheck(
            count: propertyCases(default: 500),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 0...(2 * SmallSet<Int>.threshold + 2))
        ) { seed, size in
            var rng = SplitMix64(seed: seed)
            // Few distinct values, so that repeats and misses are both common.
            let elements = (0..<size).map { _ in Int.random(in: 0..<(size + 3), using: &rng) }
            let small = SmallSet(elements)
            let hashed = Set(elements)
            for probe in -1...(size + 3) {
                #expect(small.contains(probe) == hashed.contains(probe), "seed \(seed), \(elements), \(probe)")
            }
            #expect(elements.hasNoRepeats == (hashed.count == elements.count), "seed \(seed), \(elements)")
        }
    }

    @Test func repeatsAreFoundWhereverTheyAre() {
        for size in 2...(2 * SmallSet<Int>.threshold) {
            let distinct = Array(0..<size)
            #expect(distinct.hasNoRepeats)
            for i in 0..<size {
                for j in 0..<size where j != i {
                    var repeated = distinct
                    repeated[j] = repeated[i]
                    #expect(!repeated.hasNoRepeats, "\(repeated)")
                }
            }
        }
    }
}
