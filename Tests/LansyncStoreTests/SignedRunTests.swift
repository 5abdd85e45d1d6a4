import Crypto
import Foundation
import LansyncCore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// A P-256 key signing as a member of cluster 99 would (the host's signer is the node's key).
struct TestSigner: WriteSigner {
    let key = P256.Signing.PrivateKey()
    let cluster = NodeID.node(99)
    var publicKey: [UInt8] { Array(key.publicKey.compressedRepresentation) }
    /// None unless a test gives one: the checks here take every key as certified
    /// (``LansyncIdentity/CertifiedKeys`` has its own tests).
    var certificate: [UInt8] = []
    func sign(_ bytes: [UInt8]) -> [UInt8]? { (try? key.signature(for: bytes)).map { Array($0.rawRepresentation) } }

    /// A check of batches' proofs that takes this signer's key as every writer's member's.
    var check: RunCheck {
        let key = key.publicKey
        return RunCheck(
            cluster: cluster,
            verify: { signature, bytes, _, _ in
                guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
                    return false
                }
                return key.isValidSignature(parsed, for: bytes)
            },
            certify: { _, _ in true }
        )
    }

    /// True if `run` is this signer's signature over `leaves`.
    func signed(_ run: SignedRun, over leaves: [RunLeaf]) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: run.signature),
            run.key == publicKey
        else { return false }
        return key.publicKey.isValidSignature(
            signature,
            for: run.signedBytes(cluster: cluster, root: SignedRun.root(of: leaves))
        )
    }
}

/// Every store signs its own writes in the transaction that makes them (Docs/SECURITY.md,
/// "Signed writes"): one run per commit of consecutive dots, over the digest of every field
/// version the dots wrote.
@Suite(.computeBound) struct SignedRunTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("signed-runs")
    let title = FieldName.named("title")
    let owner = FieldName.named("owner")

    /// A new SQLite replica of node 1, signing with a new key.
    func signingStore(_ name: String) throws -> (ReplicaStore, TestSigner) {
        let store = try ReplicaStore.create(
            path: "\(dir)/\(name).sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "a",
            fingerprint: "test",
            lease: WriterLease(directory: dir)
        )
        let signer = TestSigner()
        store.signing.use(signer)
        return (store, signer)
    }

    /// The leaves of dot `counter` in `item`: one per field whose state holds a version of it.
    func leaves(of counter: UInt64, writer: NodeID, in item: ItemState) -> [RunLeaf] {
        item.fields.flatMap { name, state in
            state.versions.filter { $0.dot == Dot(node: writer, counter: counter) }.map {
                RunLeaf(item: item.id, field: name, version: $0)
            }
        }
    }

    @Test(arguments: StorageKind.all)
    func anEditIsSignedOverEveryFieldItWrote(kind: StorageKind) throws {
        let site = try StorageSite(kind, "signed-edit")
        defer { site.close() }
        let a = try site.replica(1)
        let signer = TestSigner()
        a.signing.use(signer)
        let x = ItemID.named("x")
        let created = try a.apply(
            .create(type: "task", assignments: [.set(title, .string("one")), .set(owner, .string("ann"))]),
            to: x,
            wallMilliseconds: t0
        )
        let state = try #require(try a.itemState(x))
        let createLeaves = leaves(of: created.counter, writer: created.node, in: state)
        #expect(createLeaves.count == 3)  // _type, owner, title
        let updated = try a.apply(.update([.set(title, .string("two"))]), to: x, wallMilliseconds: t0 + 1)
        let after = try #require(try a.itemState(x))
        let runs = try a.signedRuns(of: nil)
        try #require(runs.count == 2)
        #expect(runs[0].writer == created.node && runs[0].first == created.counter && runs[0].last == created.counter)
        #expect(signer.signed(runs[0], over: createLeaves))
        #expect(runs[1].first == updated.counter && runs[1].last == updated.counter)
        #expect(signer.signed(runs[1], over: leaves(of: updated.counter, writer: updated.node, in: after)))
        // A signature over anything else does not hold: the leaves of the other run, or one left out.
        #expect(!signer.signed(runs[1], over: createLeaves))
        #expect(!signer.signed(runs[0], over: Array(createLeaves.dropFirst())))
    }

    /// `history` says which versions are signed: those of a replica with a signer, not those of
    /// one without (a release before signed writes), on the replica that wrote them and on one
    /// that received them.
    @Test func historySaysWhichVersionsAreSigned() throws {
        let site = try StorageSite(.sqlite, "signed-history")
        defer { site.close() }
        let a = try #require(try site.replica(1) as? ReplicaStore)
        let b = try #require(try site.replica(2) as? ReplicaStore)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("unsigned"))]), to: x, wallMilliseconds: t0)
        a.signing.use(TestSigner())
        try a.apply(.update([.set(title, .string("signed"))]), to: x, wallMilliseconds: t0 + 1)
        try syncAsASession(a, b, batchSize: 10, deltas: false, wallMilliseconds: t0 + 2)
        // a holds both; b only the one shown (the other was superseded before it came).
        #expect(try a.history(x, field: title).map(\.isSigned) == [true, false])
        #expect(try b.history(x, field: title).map(\.isSigned) == [true])
        #expect(try b.history(x, field: .type).map(\.isSigned) == [false])
    }

    @Test(arguments: StorageKind.all)
    func aReplicaWithoutSignerWritesUnsigned(kind: StorageKind) throws {
        let site = try StorageSite(kind, "unsigned-edit")
        defer { site.close() }
        let a = try site.replica(1)
        try a.apply(
            .create(type: "task", assignments: [.set(title, .string("one"))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        #expect(try a.signedRuns(of: nil).isEmpty)
    }

    /// A commit of 1,100 items of two fields: runs of 256 items (512 leaves) each, cut as they
    /// fill (an import does not hold its leaves until it commits), and each signed over exactly
    /// the leaves of its dots.
    @Test func aBulkEditSignsRunsOfAtMostTheirBoundOfLeavesEach() throws {
        let (store, signer) = try signingStore("bulk")
        let count = 1100
        try store.applyEdits(wallMilliseconds: t0) { session in
            for n in 0..<count {
                try session.apply(
                    .create(type: "task", assignments: [.set(title, .string("n\(n)"))]),
                    to: .named("i\(n)")
                )
            }
        }
        let runs = try store.signedRuns(of: nil)
        let perRun = UInt64(SignedRun.maxLeaves / 2)
        #expect(runs.map { $0.last - $0.first + 1 } == [perRun, perRun, perRun, perRun, UInt64(count) - 4 * perRun])
        var leaves: [[RunLeaf]] = Array(repeating: [], count: runs.count)
        for n in 0..<count {
            let item = try #require(try store.itemState(.named("i\(n)")))
            for (name, state) in item.fields {
                for version in state.versions {
                    let run = try #require(runs.firstIndex { $0.contains(version.dot.counter) })
                    leaves[run].append(RunLeaf(item: item.id, field: name, version: version))
                }
            }
        }
        #expect(leaves.prefix(4).allSatisfy { $0.count == SignedRun.maxLeaves })
        for (run, its) in zip(runs, leaves) { #expect(signer.signed(run, over: its)) }
        #expect(!signer.signed(runs[1], over: leaves[0]))
    }

    /// The batches of `from`'s whole delta for an empty replica, `batchSize` field states each.
    func batches(of from: any ReplicaStorage, batchSize: Int) throws -> [DeltaBatch] {
        var stream = try from.deltaStream(
            for: VersionVector(),
            maxUpdates: batchSize,
            budgetBytes: 2 << 20,
            unclaimed: true,
            deltaBase: nil
        )
        var batches: [DeltaBatch] = []
        while let batch = try stream.next(peerHolds: VersionVector()) { batches.append(batch) }
        return batches
    }

    @Test(arguments: StorageKind.all)
    func aDeltaCarriesTheProofsOfItsVersionsAndTheyHoldWhereItIsReceived(kind: StorageKind) throws {
        let site = try StorageSite(kind, "signed-delta")
        defer { site.close() }
        let a = try site.replica(1)
        let b = try site.replica(2)
        let signer = TestSigner()
        a.signing.use(signer)
        for n in 0..<30 {
            try a.apply(
                .create(type: "task", assignments: [.set(title, .string("t\(n)")), .set(owner, .string("o\(n)"))]),
                to: .named("i\(n)"),
                wallMilliseconds: t0 + UInt64(n)
            )
        }
        try a.apply(.update([.set(title, .string("again"))]), to: .named("i3"), wallMilliseconds: t0 + 100)
        let batches = try batches(of: a, batchSize: 20)
        #expect(batches.count > 1)
        var signed = 0
        for batch in batches {
            let outcome = signer.check.check(batch)
            #expect(outcome.failed.isEmpty)
            #expect(outcome.unsigned == 0)
            signed += outcome.signed
        }
        // Every live version: 30 items of three fields, one of them written again.
        #expect(signed == 90)
        try syncAsASession(a, b, batchSize: 20, deltas: false, wallMilliseconds: t0 + 200)
        #expect(try b.signedRuns(of: nil) == (try a.signedRuns(of: nil)))
    }

    /// A run holds only if its key is a member's (the authority's certificate, checked by the
    /// session's ``RunCheck/Certify``): the certificate travels with the first proof of its key
    /// in each batch, from the signer's own and then from what a receiver kept, so a machine that
    /// never met the member can check it.
    @Test(arguments: StorageKind.all)
    func aRunTravelsWithItsMembersCertificateAndHoldsOnlyWithIt(kind: StorageKind) throws {
        let site = try StorageSite(kind, "signed-certificate")
        defer { site.close() }
        let a = try site.replica(1)
        let b = try site.replica(2)
        let signer = TestSigner(certificate: [0x30, 3, 1, 2, 3])
        a.signing.use(signer)
        for n in 0..<3 {
            try a.apply(
                .create(type: "task", assignments: [.set(title, .string("t\(n)"))]),
                to: .named("c\(n)"),
                wallMilliseconds: t0 + UInt64(n)
            )
        }
        let batch = try #require(try batches(of: a, batchSize: 100).first)
        #expect(batch.proofs.count == 3, "a run a commit")
        #expect(batch.proofs.first?.certificate == signer.certificate)
        #expect(batch.proofs.dropFirst().allSatisfy { $0.certificate == nil })
        // A receiver that does not take the key as a member's: no run holds, nothing is signed.
        let refusing = RunCheck(cluster: signer.cluster, verify: signer.check.verify) { _, _ in false }
        let refused = refusing.check(batch)
        #expect(refused.held.isEmpty && refused.signed == 0 && refused.unsigned == 6)
        #expect(refused.failed.count == 3 && refused.failed.allSatisfy { $0.why.contains("certificate") })
        // One that takes the key with this certificate alone keeps it once, with the key's
        // first run, and passes it on.
        let certifying = RunCheck(cluster: signer.cluster, verify: signer.check.verify) { key, certificate in
            key == signer.publicKey && certificate == signer.certificate
        }
        let held = certifying.check(batch)
        #expect(held.held.count == 3 && held.signed == 6)
        #expect(held.held.compactMap(\.certificate) == [signer.certificate])
        try syncAsASession(a, b, batchSize: 100, deltas: false, wallMilliseconds: t0 + 200, check: certifying)
        #expect(try b.signedRuns(of: nil) == (try a.signedRuns(of: nil)))
        let passed = try #require(try batches(of: b, batchSize: 100).first)
        #expect(passed.proofs.first?.certificate == signer.certificate)
        #expect(certifying.check(passed).held.count == 3)
    }

    @Test(arguments: StorageKind.all)
    func aProofDoesNotHoldForAVersionChangedOnTheWay(kind: StorageKind) throws {
        let site = try StorageSite(kind, "signed-tampered")
        defer { site.close() }
        let a = try site.replica(1)
        let signer = TestSigner()
        a.signing.use(signer)
        let x = ItemID.named("x")
        let dot = try a.apply(
            .create(type: "task", assignments: [.set(title, .string("one"))]),
            to: x,
            wallMilliseconds: t0
        )
        let batch = try #require(try batches(of: a, batchSize: 10).first)
        // The same batch with the title's version saying something else, under the same dot.
        let forged = batch.updates.map { update -> FieldUpdate in
            guard update.key.field == title else { return update }
            var state = FieldState()
            state.assign(.string("forged"), dot: dot, timestamp: HLCTimestamp(rawValue: t0 << 16))
            return FieldUpdate(key: update.key, state: state)
        }
        var tampered = DeltaBatch(updates: forged, covers: batch.covers)
        tampered.proofs = batch.proofs
        let outcome = signer.check.check(tampered)
        #expect(outcome.held.isEmpty)
        #expect(outcome.failed.count == 1)
        #expect(outcome.signed == 0 && outcome.unsigned == 2)
        // Without its proof the same batch is unsigned, not failed.
        #expect(signer.check.check(DeltaBatch(updates: forged, covers: batch.covers)).unsigned == 2)
    }

    /// A delta ends a batch before a run rather than inside it, so a run travels whole and its
    /// proof holds no leaves; a run larger than a batch is split, and its proof carries the
    /// leaves of its versions in the other batches.
    @Test(arguments: [520, 100])
    func aRunTravelsWholeUnlessItIsLargerThanABatch(batchSize: Int) throws {
        let (store, signer) = try signingStore("runs-\(batchSize)")
        // Two runs: 256 items of two fields, then 44.
        try store.applyEdits(wallMilliseconds: t0) { session in
            for n in 0..<300 {
                try session.apply(
                    .create(type: "task", assignments: [.set(title, .string("n\(n)"))]),
                    to: .named("i\(n)")
                )
            }
        }
        #expect(try store.signedRuns(of: nil).count == 2)
        let batches = try batches(of: store, batchSize: batchSize)
        var signed = 0
        for batch in batches {
            let outcome = signer.check.check(batch)
            #expect(outcome.failed.isEmpty)
            #expect(outcome.unsigned == 0)
            signed += outcome.signed
            if batchSize > SignedRun.maxLeaves {
                #expect(batch.proofs.allSatisfy { $0.leaves.isEmpty })
            }
        }
        #expect(signed == 600)
        if batchSize > SignedRun.maxLeaves {
            // The first run (512 leaves) alone: the second does not fit beside it.
            #expect(batches.map(\.updates.count) == [512, 88])
        } else {
            #expect(batches.contains { $0.proofs.contains { !$0.leaves.isEmpty } })
        }
    }
}
