import LansyncCore
import LansyncTestSupport
import PropertyBased
import Testing

/// Retired writers fold (Docs/MERGE.md, "Retired writers fold"): the rules a replica folds by,
/// and the law that makes a told vector exact.
@Suite struct FoldingTests {
    let node = NodeID.node(3)
    var retired: [NodeID] { (1...3).map { NodeID(high: node.high, low: 100 + $0) } }
    var current: NodeID { NodeID(high: node.high, low: 200) }
    let other = NodeID.node(4)

    func ownRetired(_ writer: NodeID) -> Bool { writer != current && writer.isWriter(of: node) }

    @Test func aRetiredWriterFoldsOnlyOnceTheStableVectorReachesIt() {
        let vector = VersionVector([retired[0]: 5, retired[1]: 9, current: 4, other: 7])
        // Everything is stable but retired[1]'s last write and the others'.
        let stable = VersionVector([retired[0]: 5, retired[1]: 8, current: 4, other: 7])
        let folds = WriterFolding.folds(vector: vector, stable: stable, folded: VersionVector(), isRetired: ownRetired)
        #expect(folds == VersionVector([retired[0]: 5]), "the current writer and other nodes' writers stay")
        // Once folded at its counter, a writer is not folded again; a later write folds anew.
        #expect(
            WriterFolding.folds(vector: vector, stable: stable, folded: folds, isRetired: ownRetired).isEmpty
        )
        let wroteAgain = VersionVector([retired[0]: 6])
        #expect(
            WriterFolding.folds(
                vector: vector.joined(with: wroteAgain),
                stable: stable.joined(with: wroteAgain),
                folded: folds,
                isRetired: ownRetired
            ) == wroteAgain
        )
    }

    @Test func aPeersFoldIsTakenOnlyWhereThisReplicaCaughtUp() {
        let peer = VersionVector([retired[0]: 5, retired[1]: 9, retired[2]: 2])
        let vector = VersionVector([retired[0]: 5, retired[1]: 3, retired[2]: 2])
        let folded = VersionVector([retired[2]: 2])
        #expect(
            WriterFolding.adoptable(peer, vector: vector, folded: folded) == VersionVector([retired[0]: 5]),
            "retired[1] waits until this replica holds its 9 writes; retired[2] is folded already"
        )
    }

    @Test func aToldVectorDropsOnlyWhatTheFoldsCover() {
        let vector = VersionVector([retired[0]: 5, retired[1]: 9, current: 4])
        let folded = VersionVector([retired[0]: 5, retired[1]: 7])
        let told = vector.folded(by: folded)
        #expect(
            told == VersionVector([retired[1]: 9, current: 4]),
            "a writer that wrote past its fold keeps its entry"
        )
        #expect(told.unfolded(with: folded) == vector)
        #expect(vector.folded(by: VersionVector()) == vector)
    }

    /// The law a hello relies on: a vector told without the writers folded, read back with them,
    /// is the vector, whenever the folded set is covered by it.
    @Test func aToldVectorReadsBackWhole() async {
        await propertyCheck(
            count: propertyCases(default: 500),
            input: Gen.uint64(in: 0 ... .max)
        ) { seed in
            var rng = SplitMix64(seed: seed)
            let writers = (1...8).map { NodeID.node(UInt64($0)) }
            var vector = VersionVector()
            var folded = VersionVector()
            for writer in writers where rng.chance(70) {
                let counter = UInt64.random(in: 1...50, using: &rng)
                vector.raise(writer, to: counter)
                if rng.chance(50) { folded.raise(writer, to: UInt64.random(in: 1...counter, using: &rng)) }
            }
            let told = vector.folded(by: folded)
            #expect(told.unfolded(with: folded) == vector, "seed \(seed)")
            #expect(told.counters.count <= vector.counters.count)
            #expect(told.counters.allSatisfy { $0.value > folded[$0.key] })
        }
    }
}
