import Crypto
import LansyncCore
import LansyncTestLane
import LansyncTestSupport
import Testing

@testable import LansyncReplica

/// Signed writes required (Docs/SECURITY.md, "Requiring signed writes"), in every store: a
/// peer's write past the requirement's cut without a signed run that holds is overruled as a
/// revoked node's is; what the cut keeps, what is proven and what the replica already holds
/// stand. A replica signs its own older writes once it can, and a proof is pieced together right
/// when the sender holds a version its run does not cover.
@Suite(.computeBound) struct RequiredSignatureTests: ReplicaFixture {
    let dir = makeTemporaryDirectory("required-signatures")
    let title = FieldName.named("title")
    let owner = FieldName.named("owner")

    /// Signatures required past `cut`.
    func required(keeping cut: [NodeID: UInt64] = [:]) -> RevokedWriters {
        RevokedWriters([], signatures: SignatureRequirement(cut: cut, reason: "written unsigned in a test"))
    }

    /// A session from `from` to `to`, its batches' proofs checked as a session checks them
    /// (``RunCheck``, with the key each run names: these replicas' keys are made up), under
    /// `revoked`.
    func sync(_ from: any ReplicaStorage, _ to: any ReplicaStorage, at now: UInt64, revoked: RevokedWriters) throws {
        let check = RunCheck(
            cluster: .node(99),
            verify: { signature, bytes, key, _ in
                guard let key = try? P256.Signing.PublicKey(compressedRepresentation: key),
                    let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
                else { return false }
                return key.isValidSignature(signature, for: bytes)
            },
            certify: { _, _ in true }
        )
        try syncAsASession(
            from,
            to,
            batchSize: 10,
            deltas: false,
            wallMilliseconds: now,
            revoked: revoked,
            check: check
        )
    }

    func value(_ store: any ReplicaStorage, _ item: ItemID, _ field: FieldName) throws -> Value? {
        try store.itemState(item)?.fields[field]?.shownValue
    }

    @Test(arguments: StorageKind.all)
    func anUnsignedWritePastTheCutIsOverruledAndOneBeforeItStands(kind: StorageKind) throws {
        let site = try StorageSite(kind, "required-overrule")
        defer { site.close() }
        let a = try site.replica(1)
        a.signing.use(TestSigner())
        let b = try site.replica(2)  // signs nothing: a replica before protocol 1.14, or a forger
        let c = try site.replica(3)
        let x = ItemID.named("x")
        try a.apply(.create(type: "task", assignments: [.set(title, .string("a's"))]), to: x, wallMilliseconds: t0)
        try sync(a, b, at: t0, revoked: RevokedWriters())
        try sync(a, c, at: t0, revoked: required())
        #expect(try value(c, x, title) == .string("a's"), "a's signed write is taken")

        let early = try b.apply(.update([.set(owner, .string("b's early"))]), to: x, wallMilliseconds: t0 + 1)
        let late = try b.apply(.update([.set(title, .string("b's late"))]), to: x, wallMilliseconds: t0 + 2)
        // The cut keeps b's writer up to its first edit: that one stands unsigned, the later one
        // is overruled, and the field keeps its value.
        try sync(b, c, at: t0 + 3, revoked: required(keeping: [early.node: early.counter]))
        #expect(try value(c, x, owner) == .string("b's early"))
        #expect(try value(c, x, title) == .string("a's"))
        let refusals = try c.revokedWriteRejections(limit: 10)
        #expect(
            refusals.map(\.counter) == [late.counter] && refusals.allSatisfy { $0.reason.contains("written unsigned") }
        )

        // The same batch again refuses nothing more: the overrule has seen it.
        let before = try c.versionVector()
        try sync(b, c, at: t0 + 4, revoked: required())
        #expect(try c.revokedWriteRejections(limit: 10).count == 1)
        #expect(try c.versionVector() == before)
    }

    @Test(arguments: StorageKind.all)
    func anItemOnlyAnUnsignedWriteCreatedGoesToTheBin(kind: StorageKind) throws {
        let site = try StorageSite(kind, "required-create")
        defer { site.close() }
        let b = try site.replica(2)
        let c = try site.replica(3)
        let y = ItemID.named("y")
        try b.apply(.create(type: "task", assignments: [.set(title, .string("forged"))]), to: y, wallMilliseconds: t0)
        try sync(b, c, at: t0, revoked: required())
        let state = try #require(try c.itemState(y))
        #expect(state.isDeleted, "\(state)")
    }

    @Test(arguments: StorageKind.all)
    func aReplicaSignsTheWritesItMadeBeforeItCouldOnce(kind: StorageKind) throws {
        let site = try StorageSite(kind, "required-resign")
        defer { site.close() }
        let b = try site.replica(2)
        let c = try site.replica(3)
        let x = ItemID.named("x")
        try b.apply(.create(type: "task", assignments: [.set(title, .string("one"))]), to: x, wallMilliseconds: t0)
        try b.apply(.update([.set(title, .string("two"))]), to: x, wallMilliseconds: t0 + 1)
        #expect(try b.signHeldOwnWrites() == 0, "nothing is signed without a signer")
        let signer = TestSigner()
        b.signing.use(signer)
        // The live versions: `_type` of the create and the title of the update.
        #expect(try b.signHeldOwnWrites() == 2)
        #expect(try b.signHeldOwnWrites() == 0, "once")
        let runs = try b.signedRuns(of: nil)
        #expect(runs.count == 1 && runs[0].first == 1 && runs[0].last == 2, "\(runs)")
        try sync(b, c, at: t0 + 2, revoked: required())
        #expect(try value(c, x, title) == .string("two"))
        #expect(try c.revokedWriteRejections(limit: 10).isEmpty)
    }

    /// d holds x as b first wrote it; b then replaced x's title and signed its older writes (its
    /// run covers the versions it held then, not the title it replaced). c, which held the old
    /// title too, keeps its digest when it replaces it, and the proof it sends d for the new
    /// title is pieced together without it: d takes the title where signatures are required.
    @Test(arguments: StorageKind.all)
    func aProofLeavesOutAVersionItsRunDoesNotCover(kind: StorageKind) throws {
        let site = try StorageSite(kind, "required-piece")
        defer { site.close() }
        let b = try site.replica(2)
        let c = try site.replica(3)
        let d = try site.replica(4)
        let x = ItemID.named("x")
        try b.apply(
            .create(type: "task", assignments: [.set(title, .string("one")), .set(owner, .string("bo"))]),
            to: x,
            wallMilliseconds: t0
        )
        try sync(b, c, at: t0, revoked: RevokedWriters())
        try sync(c, d, at: t0, revoked: RevokedWriters())
        try b.apply(.update([.set(title, .string("two"))]), to: x, wallMilliseconds: t0 + 1)
        b.signing.use(TestSigner())
        #expect(try b.signHeldOwnWrites() == 3)  // _type and owner of dot 1, title of dot 2
        // c checks what it pieces together for the cluster its own signer signs for.
        c.signing.use(TestSigner())
        try sync(b, c, at: t0 + 2, revoked: required())
        #expect(try value(c, x, title) == .string("two"))
        try sync(c, d, at: t0 + 3, revoked: required())
        #expect(try value(d, x, title) == .string("two"))
        #expect(try d.revokedWriteRejections(limit: 10).isEmpty)
    }

    /// One run wrote x and y; x is deleted and collected. The run's digest of x's collected
    /// title is kept, so y still travels with its proof, and a replica that requires signed
    /// writes takes it (before, collection dropped the digest and y went unsigned, to be refused).
    @Test(arguments: StorageKind.all)
    func aRunThatWroteACollectedItemStillProvesTheRest(kind: StorageKind) throws {
        let site = try StorageSite(kind, "required-collected")
        defer { site.close() }
        let a = try site.replica(1)
        try a.setCollectionSettings(CollectionSettings(trashWindow: 0, awayAfter: CollectionSettings.day))
        let c = try site.replica(3)
        let (x, y) = (ItemID.named("x"), ItemID.named("y"))
        try a.apply(.create(type: "task", assignments: [.set(title, .string("x"))]), to: x, wallMilliseconds: t0)
        try a.apply(.create(type: "task", assignments: [.set(title, .string("y"))]), to: y, wallMilliseconds: t0 + 1)
        a.signing.use(TestSigner())
        #expect(try a.signHeldOwnWrites() == 4)  // one run: x's and y's `_type` and title
        try a.apply(.delete, to: x, wallMilliseconds: t0 + 2)
        let now = WallClock.milliseconds
        _ = try a.collect(now: now)
        #expect(try a.collect(now: now + 1).collected == 1)
        #expect(try a.itemState(x)?.fields[title] == nil, "x's title was collected")
        try sync(a, c, at: t0 + 3, revoked: required())
        #expect(try value(c, y, title) == .string("y"))
        #expect(try c.itemState(y)?.isDeleted == false)
        #expect(try c.revokedWriteRejections(limit: 10).isEmpty)
    }

    @Test func aSubsetIsFoundByDroppingTheFirstLeavesFirst() {
        let leaves = (1...5).map {
            RunLeaf(
                counter: UInt64($0),
                field: .named("f"),
                digest: LeafDigest(bytes: [UInt8](repeating: 0, count: 32))!
            )
        }
        var tried: [[UInt64]] = []
        let found = RunProofs.subset(of: leaves, keeping: 3) { kept in
            tried.append(kept.map(\.counter))
            return kept.map(\.counter) == [1, 3, 5]
        }
        #expect(found?.map(\.counter) == [1, 3, 5])
        #expect(tried.first == [3, 4, 5], "the first two dropped first")
        #expect(RunProofs.subset(of: leaves, keeping: 3) { _ in false } == nil)
        #expect(RunProofs.subset(of: leaves, keeping: 5) { _ in true }?.count == 5)
    }
}
