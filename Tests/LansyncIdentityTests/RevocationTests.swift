import LansyncCore
import Testing

@testable import LansyncIdentity

/// Cluster statements (revocations, admitter sets): only the cluster's authority can make one
/// that members accept, and no byte of one can change unnoticed.
@Suite struct ClusterStatementTests {
    let authority = try! ClusterSecret.generate()
    let other = try! ClusterSecret.generate()

    /// Every byte flipped in turn: the statement no longer reads, or no longer verifies.
    func expectTamperEvident(_ statement: ClusterStatement, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = statement.encoded
        #expect(ClusterStatement(encoded: bytes) == statement, sourceLocation: sourceLocation)
        for i in bytes.indices {
            var changed = bytes
            changed[i] ^= 0x20
            if let read = ClusterStatement(encoded: changed) {
                #expect(
                    !read.isSigned(by: authority.trust),
                    "byte \(i) changed, still signed",
                    sourceLocation: sourceLocation
                )
            }
        }
        #expect(ClusterStatement(encoded: []) == nil && ClusterStatement(encoded: bytes + [0]) == nil)
    }

    @Test func onlyTheAuthoritysRevocationsCount() throws {
        let node = NodeKey().nodeID
        let by = NodeKey().nodeID
        let revocation = try #require(
            try Revocation.make(
                node: node,
                name: "laptop",
                reason: "lost on the train",
                at: 1_700_000_000_000,
                by: by,
                keeping: [node: 7, .writer(for: node): 3, by: 9],
                authority: authority
            ).first
        )
        #expect(revocation.isSigned(by: authority.trust))
        #expect(!revocation.isSigned(by: other.trust), "another cluster's authority did not sign it")
        #expect(revocation.cut?.counters.count == 2, "only the revoked node's writers are named")
        #expect(revocation.cut?.counters[node] == 7 && revocation.cut?.parts == 1)
        let forged = try Revocation.make(
            node: node,
            name: "laptop",
            reason: "",
            at: 1,
            by: by,
            keeping: [:],
            authority: other
        )
        #expect(forged.count == 1 && !forged[0].isSigned(by: authority.trust))
        expectTamperEvident(.revocation(revocation))
        // The reason is cut between characters, and still signed.
        let long = try Revocation.make(
            node: node,
            name: "x",
            reason: "a" + String(repeating: "é", count: 300),
            at: 2,
            by: by,
            keeping: [node: 1],
            authority: authority
        )[0]
        #expect(
            ClusterStatement.revocation(long).key != ClusterStatement.revocation(revocation).key,
            "two revocations of a node (by two admitting machines) are both kept: each cut is whole on its own"
        )
        #expect(long.reason.utf8.count <= Revocation.maxReasonBytes && long.isSigned(by: authority.trust))
        #expect(ClusterStatement(encoded: ClusterStatement.revocation(long).encoded) == .revocation(long))
    }

    /// A node with many writer ids (one per reboot) gets a cut in parts, each a signed statement
    /// that fits a hello, with every writer in exactly one part.
    @Test func aLongCutComesInParts() throws {
        let node = NodeKey().nodeID
        var counters: [NodeID: UInt64] = [:]
        for i in 0..<400 { counters[.writer(for: node)] = UInt64(i + 1) }
        let parts = try Revocation.make(
            node: node,
            name: "laptop",
            reason: String(repeating: "r", count: 300),
            at: 3,
            by: node,
            keeping: counters,
            authority: authority
        )
        #expect(parts.count == 3 && parts.allSatisfy { $0.cut?.parts == 3 })
        #expect(Set(parts.map { ClusterStatement.revocation($0).key }).count == 3, "each part is kept")
        var named: [NodeID: UInt64] = [:]
        for part in parts {
            let statement = ClusterStatement.revocation(part)
            #expect(statement.encoded.count < 4096, "a part fits a hello statement")
            #expect(part.isSigned(by: authority.trust))
            named.merge(part.cut?.counters ?? [:]) { _, _ in
                Issue.record("a writer in two parts")
                return 0
            }
        }
        #expect(named == counters)
        expectTamperEvident(.revocation(parts[1]))
    }

    /// A revocation made by a protocol 1.3 node (kind 1, no cut) still reads and verifies.
    @Test func aRevocationWithoutACutStillCounts() throws {
        let node = NodeKey().nodeID
        let message = Revocation.signedBytes(
            cluster: authority.clusterID,
            node: node,
            name: "old",
            reason: "r",
            at: 4,
            by: node,
            cut: nil
        )
        let legacy = Revocation(
            node: node,
            name: "old",
            reason: "r",
            at: 4,
            by: node,
            cut: nil,
            signature: try ClusterStatement.sign(message, with: authority)
        )
        let statement = ClusterStatement.revocation(legacy)
        #expect(statement.encoded.first == 1 && statement.key.first == 1)
        #expect(ClusterStatement(encoded: statement.encoded) == statement && legacy.isSigned(by: authority.trust))
        expectTamperEvident(statement)
    }

    @Test func onlyTheAuthoritysAdmissionsCount() throws {
        let node = NodeKey().nodeID
        let by = NodeKey().nodeID
        let admission = try Admission.make(node: node, name: "garage", at: 9, by: by, authority: authority)
        #expect(admission.isSigned(by: authority.trust) && !admission.isSigned(by: other.trust))
        let forged = try Admission.make(node: node, name: "garage", at: 9, by: by, authority: other)
        #expect(!forged.isSigned(by: authority.trust))
        expectTamperEvident(.admission(admission))
        let later = try Admission.make(node: node, name: "again", at: 10, by: by, authority: authority)
        #expect(ClusterStatement.admission(later).key == ClusterStatement.admission(admission).key, "the first stays")
    }

    @Test func onlyTheAuthoritysAdmitterSetsCount() throws {
        let kitchen = NodeKey().nodeID
        let relay = NodeKey().nodeID
        let set = try AdmitterSet.make(nodes: [relay, kitchen, kitchen], at: 5, by: kitchen, authority: authority)
        #expect(set.nodes == [kitchen, relay].sorted(), "each machine once, in order")
        #expect(set.isSigned(by: authority.trust) && !set.isSigned(by: other.trust))
        expectTamperEvident(.admitters(set))
        let later = try AdmitterSet.make(nodes: [kitchen], at: 6, by: kitchen, authority: authority)
        #expect(ClusterStatement.admitters(later).key != ClusterStatement.admitters(set).key, "every set is kept")
        #expect(ClusterStatement(encoded: [9, 1, 2]) == nil, "an unknown kind is passed over")
    }

    @Test func onlyTheAuthoritysSettingsCount() throws {
        let kitchen = NodeKey().nodeID
        let settings = try ClusterSettings.make(
            trashWindow: 0,
            awayAfter: 86_400_000,
            at: 7,
            by: kitchen,
            authority: authority
        )
        #expect(settings.isSigned(by: authority.trust) && !settings.isSigned(by: other.trust))
        expectTamperEvident(.settings(settings))
        let read = try #require(ClusterStatement(encoded: ClusterStatement.settings(settings).encoded))
        #expect(read == .settings(settings))
        let later = try ClusterSettings.make(trashWindow: 1, awayAfter: 2, at: 8, by: kitchen, authority: authority)
        #expect(ClusterStatement.settings(later).key != ClusterStatement.settings(settings).key, "every set is kept")
    }
}

/// Issue 62, defect 5: cluster settings and admitter sets are ordered by a stamp a slow clock
/// cannot move backwards, and two made at once are ordered the same everywhere.
@Suite struct StatementOrderTests {
    let authority = try! ClusterSecret.generate()

    @Test func aNewerSignerWithAnOlderClockWins() throws {
        let first = try ClusterSettings.make(
            trashWindow: 7 * 86_400_000,
            awayAfter: 30 * 86_400_000,
            at: 1_000_000,
            by: NodeKey().nodeID,
            authority: authority
        )
        // The second admitting machine's clock is ten minutes behind the first's.
        let slow = try #require(ClusterStatement.stamp(now: 1_000_000 - 600_000, after: first.at))
        #expect(slow == first.at + 1)
        let second = try ClusterSettings.make(
            trashWindow: 86_400_000,
            awayAfter: 30 * 86_400_000,
            at: slow,
            by: NodeKey().nodeID,
            authority: authority
        )
        #expect(second.supersedes(first) && !first.supersedes(second))
        // A clock ahead keeps its own time.
        #expect(ClusterStatement.stamp(now: 5_000_000, after: first.at) == 5_000_000)
        #expect(ClusterStatement.stamp(now: 5, after: nil) == 5)
        #expect(ClusterStatement.stamp(now: 5, after: .max) == nil, "nothing orders past the largest stamp")
    }

    @Test func equalStampsAreOrderedTheSameEverywhere() throws {
        let x = try AdmitterSet.make(nodes: [NodeKey().nodeID], at: 42, by: NodeKey().nodeID, authority: authority)
        let y = try AdmitterSet.make(nodes: [NodeKey().nodeID], at: 42, by: NodeKey().nodeID, authority: authority)
        #expect(x.supersedes(y) != y.supersedes(x), "exactly one of two sets made at once counts")
        #expect(!x.supersedes(x))
        #expect(x.supersedes(nil))
    }
}

/// Roles (statement kind 6): only the authority's count, no byte changes unnoticed, a reader's
/// statement carries its cut and nothing else does, and the latest one is the same everywhere.
@Suite struct RoleStatementTests {
    let authority = try! ClusterSecret.generate()
    let other = try! ClusterSecret.generate()

    @Test func onlyTheAuthoritysRolesCountAndOnlyAReaderIsCut() throws {
        let node = NodeKey().nodeID
        let by = NodeKey().nodeID
        let counters: [NodeID: UInt64] = [node: 7, .writer(for: node): 3, by: 9]
        let reader = try #require(
            try RoleStatement.make(
                node: node,
                name: "shed",
                role: .reader,
                at: 5,
                by: by,
                keeping: counters,
                authority: authority
            )
            .first
        )
        #expect(reader.isSigned(by: authority.trust) && !reader.isSigned(by: other.trust))
        #expect(reader.cut.counters.count == 2 && reader.cut.counters[node] == 7, "only the member's writers")
        ClusterStatementTests().expectTamperEvident(.role(reader))
        let writer = try #require(
            try RoleStatement.make(
                node: node,
                name: "shed",
                role: .writer,
                at: 6,
                by: by,
                keeping: counters,
                authority: authority
            )
            .first
        )
        #expect(writer.cut.counters.isEmpty, "a writer's statement cuts nothing")
        #expect(writer.supersedes(reader) && !reader.supersedes(writer))
        #expect(ClusterStatement.role(writer).key != ClusterStatement.role(reader).key, "both are kept")
        // A writer's statement that names counters is malformed: a cut belongs to readers.
        let malformed = try RoleStatement(
            node: node,
            name: "shed",
            role: .writer,
            at: 6,
            by: by,
            cut: reader.cut,
            signature: []
        ).signed(with: authority)
        #expect(ClusterStatement(encoded: ClusterStatement.role(malformed).encoded) == nil)
        // An unknown role byte is not read.
        var bytes = ClusterStatement.role(writer).encoded
        let roleAt = 1 + 16 + 1 + "shed".utf8.count
        #expect(bytes[roleAt] == MemberRole.writer.rawValue)
        bytes[roleAt] = 9
        #expect(ClusterStatement(encoded: bytes) == nil)
    }

    @Test func aReaderWithManyWritersIsCutInParts() throws {
        let node = NodeKey().nodeID
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<(Revocation.writersPerPart + 5) { counters[.writer(for: node)] = 4 }
        let parts = try RoleStatement.make(
            node: node,
            name: "",
            role: .reader,
            at: 1,
            by: node,
            keeping: counters,
            authority: authority
        )
        #expect(parts.count == 2 && parts.allSatisfy { $0.cut.parts == 2 })
        #expect(Set(parts.map(\.statementID)).count == 1, "the parts are one statement")
        #expect(parts.reduce(0) { $0 + $1.cut.counters.count } == counters.count)
        #expect(MemberRole(name: "reader") == .reader && MemberRole(name: "owner") == nil)
    }

    /// A peer's role statement at the bounds' edges: read (and then dropped, unsigned), one
    /// writer past them refused as malformed, never a trap (the fuzzer's seed is the same).
    @Test func aRoleStatementAtItsBoundsIsReadAndPastThemRefused() {
        func bytes(writers: Int, part: UInt64 = 255, parts: UInt64 = 256) -> [UInt8] {
            var w = ByteWriter()
            w.byte(6)
            w.raw(NodeKey().nodeID.bytes)
            w.string(String(repeating: "r", count: 64))
            w.byte(MemberRole.reader.rawValue)
            w.fixed64(.max)
            w.raw(NodeKey().nodeID.bytes)
            w.varint(part)
            w.varint(parts)
            w.varint(UInt64(writers))
            for i in 0..<writers {
                w.fixed64(UInt64(i))
                w.varint(.max)
            }
            w.data([UInt8](repeating: 7, count: 64))
            return w.bytes
        }
        let read = ClusterStatement(encoded: bytes(writers: Revocation.writersPerPart))
        #expect(read != nil && read?.isSigned(by: authority.trust) == false)
        #expect(ClusterStatement(encoded: bytes(writers: Revocation.writersPerPart + 1)) == nil)
        #expect(ClusterStatement(encoded: bytes(writers: 1, part: 256, parts: 256)) == nil, "a part past the parts")
        #expect(ClusterStatement(encoded: bytes(writers: 1, parts: 257)) == nil, "more than 256 parts")
    }

    @Test func equalStampsAreOrderedTheSameEverywhere() throws {
        let node = NodeKey().nodeID
        let x = try RoleStatement.make(
            node: node,
            name: "",
            role: .reader,
            at: 9,
            by: NodeKey().nodeID,
            keeping: [:],
            authority: authority
        )[0]
        let y = try RoleStatement.make(
            node: node,
            name: "",
            role: .writer,
            at: 9,
            by: NodeKey().nodeID,
            keeping: [:],
            authority: authority
        )[0]
        #expect(x.supersedes(y) != y.supersedes(x), "exactly one of two statements made at once counts")
        #expect(!x.supersedes(x) && x.supersedes(nil))
    }
}
