import LansyncCore
import Testing

@testable import LansyncIdentity

/// The statement that requires signed writes (kind 7): only the authority's counts, its cut comes
/// in parts and counts once every part is held, the latest complete one counts, and a peer's
/// junk past its bounds is refused as malformed, never a trap.
@Suite struct SignedWritesStatementTests {
    let authority = try! ClusterSecret.generate()
    let other = try! ClusterSecret.generate()
    let by = NodeKey().nodeID

    func held(_ writers: Int) -> VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: (0..<writers).map { _ in (NodeKey().nodeID, UInt64(7)) }))
    }

    @Test func onlyTheAuthoritysStatementCountsAndNoByteChangesUnnoticed() throws {
        let on = try #require(
            try SignedWritesStatement.make(required: true, at: 5, by: by, held: held(3), authority: authority).first
        )
        #expect(on.isSigned(by: authority.trust) && !on.isSigned(by: other.trust))
        #expect(on.counters.count == 3 && on.counters.values.allSatisfy { $0 == 7 })
        ClusterStatementTests().expectTamperEvident(.signedWrites(on))
        let off = try #require(
            try SignedWritesStatement.make(required: false, at: 6, by: by, held: held(3), authority: authority).first
        )
        #expect(off.counters.isEmpty, "off names no cut")
        #expect(off.supersedes(on) && !on.supersedes(off))
        #expect(ClusterStatement.signedWrites(off).key != ClusterStatement.signedWrites(on).key, "both are kept")
        #expect(SignedWritesStatement.latest([on, off])?.statement == off)
        #expect(SignedWritesStatement.latest([on])?.cut == on.counters)
    }

    @Test func aLargeCutComesInPartsAndCountsWhenWhole() throws {
        let writers = SignedWritesStatement.writersPerPart * 2 + 1
        let parts = try SignedWritesStatement.make(
            required: true,
            at: 9,
            by: by,
            held: held(writers),
            authority: authority
        )
        #expect(parts.count == 3 && parts.allSatisfy { $0.parts == 3 })
        #expect(Set(parts.map(\.statementID)).count == 1)
        for part in parts {
            let bytes = ClusterStatement.signedWrites(part).encoded
            #expect(bytes.count <= 4096, "a part fits a hello statement")
            #expect(ClusterStatement(encoded: bytes) == .signedWrites(part))
        }
        #expect(SignedWritesStatement.latest(parts.dropLast()) == nil, "not whole: it does not count")
        #expect(SignedWritesStatement.latest(parts)?.cut.count == writers)
        // An earlier whole statement counts while a later one is not whole yet.
        let earlier = try SignedWritesStatement.make(
            required: false,
            at: 1,
            by: by,
            held: held(1),
            authority: authority
        )
        #expect(SignedWritesStatement.latest(earlier + parts.dropLast())?.statement == earlier[0])
    }

    /// A peer's statement at the bounds' edges is read (then dropped, unsigned); one writer or
    /// one part past them, a counter past `Int64.max`, an `off` with a cut, or a flag other than
    /// 0 or 1 is not read.
    @Test func aStatementPastItsBoundsIsNotRead() {
        func bytes(
            flag: UInt8 = 1,
            part: UInt64 = 255,
            parts: UInt64 = 256,
            writers: Int,
            counter: UInt64 = UInt64(Int64.max)
        ) -> [UInt8] {
            var w = ByteWriter()
            w.byte(7)
            w.byte(flag)
            w.fixed64(.max)
            w.raw(NodeKey().nodeID.bytes)
            w.varint(part)
            w.varint(parts)
            w.varint(UInt64(writers))
            for _ in 0..<writers {
                w.raw(NodeKey().nodeID.bytes)
                w.varint(counter)
            }
            w.data([UInt8](repeating: 1, count: 64))
            return w.bytes
        }
        let most = SignedWritesStatement.writersPerPart
        let edge = ClusterStatement(encoded: bytes(writers: most))
        #expect(edge != nil && edge?.isSigned(by: authority.trust) == false)
        #expect(ClusterStatement(encoded: bytes(writers: most + 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(writers: 1, counter: UInt64(Int64.max) + 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(parts: 257, writers: 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(part: 256, writers: 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(flag: 0, part: 0, parts: 1, writers: 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(flag: 2, part: 0, parts: 1, writers: 0)) == nil)
        #expect(ClusterStatement(encoded: bytes(flag: 0, part: 0, parts: 1, writers: 0)) != nil)
    }
}

/// What signed writes required asks of a replica's merge (``SignatureRequirement``).
@Suite struct SignatureRequirementTests {
    @Test func aWritePastTheCutNeedsAProofAndOneUnprovenIsRefusedWithTheReason() {
        let writer = NodeKey().nodeID
        let required = SignatureRequirement(cut: [writer: 5], reason: "written unsigned after a test")
        #expect(!required.needsProof(Dot(node: writer, counter: 5)))
        #expect(required.needsProof(Dot(node: writer, counter: 6)))
        #expect(required.needsProof(Dot(node: NodeKey().nodeID, counter: 1)), "a writer the cut does not name")
        var revoked = RevokedWriters([], signatures: required)
        #expect(revoked.isEmpty, "nothing is refused until a merge finds an unproven write")
        revoked.refuseUnproven([Dot(node: writer, counter: 6)])
        #expect(!revoked.isEmpty)
        #expect(revoked.refusal(of: Dot(node: writer, counter: 6))?.reason == required.reason)
        #expect(revoked.refusal(of: Dot(node: writer, counter: 7)) == nil)
        #expect(!revoked.names(writer), "no held write is judged for it")
    }
}
