import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Synchronization
import Testing

@testable import LansyncPostgres

/// A PostgreSQL replica's writer, invitations and peers' bookkeeping, on a real server each test
/// starts: a dot is never issued twice (a new writer whenever the server cannot prove the
/// database was not rolled back, or a peer shows it was), an invitation is redeemed once even
/// by two racing relay processes, and what a node saves of its peers reads as in SQLite.
@Suite(.computeBound) struct PostgresWriterTests {
    /// One call that may meet the connection the server's restart closed: the next call opens
    /// another.
    static func afterRestart<T>(_ body: () throws -> T) throws -> T {
        if let done = try? body() { return done }
        return try body()
    }

    @Test func aWriterGoesOnUntilTheServerRestartsOrAPeerShowsARollback() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-writer")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let location = try PostgresLocation(parsing: server.uri)
        var pg = try PostgresReplicaTests.replica(server, schema: "w")
        defer { pg.close() }
        let wall: UInt64 = 1_700_000_000_000
        func edit(_ n: Int) throws -> Dot {
            try pg.apply(
                .create(type: "t", assignments: [.set(.named("n"), .integer(Int64(n)))]),
                to: .named("i\(n)"),
                wallMilliseconds: wall + UInt64(n)
            )
        }
        // The writer the replica was made with goes on, also through another connection.
        #expect(try pg.renewWriterIfUnproven() == .node(1))
        #expect(try edit(1) == Dot(node: .node(1), counter: 1))
        pg.close()
        pg = try PostgresReplica.open(at: location, schema: "w", logger: PostgresReplicaTests.logger)
        #expect(try pg.renewWriterIfUnproven() == .node(1))
        #expect(try edit(2) == Dot(node: .node(1), counter: 2))
        // A restarted server may have lost commits (it runs without fsync here): the first write
        // transaction after it, even one that issues nothing of the replica's own (a node saving
        // what it knows of its peers), starts a new writer, and the feed's numbers and the change
        // stamp jump past any the lost commits gave.
        let floorBefore = ReplicaConstants.changeSequenceFloor
        try server.stopServer()
        try server.start()
        try Self.afterRestart {
            try pg.savePeers([PeerRecord(nodeID: .node(3), source: .mdns)], reports: [], names: [])
        }
        let second = try pg.info().writerID
        #expect(second != .node(1) && second.isWriter(of: .node(1)))
        #expect(try pg.writers().map(\.reason) == [.`init`, .unproven])
        #expect(try pg.changeStamp() > floorBefore)
        #expect(try pg.renewWriterIfUnproven() == second)
        #expect(try edit(3) == Dot(node: second, counter: 1))
        let seq = try #require(try server.sql("SELECT max(seq) FROM w.field").first.flatMap { UInt64($0) })
        #expect(seq > floorBefore)
        #expect(try pg.renewWriterIfUnproven() == second)
        // A peer that holds no more of the writer than the replica witnesses nothing.
        #expect(try !pg.noteWitness(VersionVector([second: 1, .node(7): 9])))
        #expect(try edit(4) == Dot(node: second, counter: 2))
        // A peer's hello holding more of it than the replica: the replica was rolled back.
        #expect(try pg.noteWitness(VersionVector([second: 5])))
        let third = try edit(5).node
        #expect(third != second && third.isWriter(of: .node(1)))
        #expect(try pg.writers().map(\.reason).last == .witness)
        // A batch whose covers hold more of the writer than the replica: rolled back to before
        // its writes here (the counter put back by hand), a SQLite peer that took them sends
        // them back, and the next write of the replica's own is under a new writer.
        let peer = try PostgresReplicaTests.sqlite(dir, "peer", node: 2)
        try syncOnce(from: pg, to: peer, wallMilliseconds: wall + 10)
        #expect(try peer.versionVector()[third] == 1)
        _ = try server.sql("UPDATE w.node SET counter = 0 WHERE node_id = '\(third.text)'")
        try syncOnce(from: peer, to: pg, wallMilliseconds: wall + 11)
        let fourth = try edit(6).node
        #expect(fourth != third && fourth.isWriter(of: .node(1)))
        #expect(try pg.writers().map(\.reason).last == .witness)
        #expect(try pg.writers().count == 4)
    }

    /// Two relay processes (two connections) redeeming one code at once: one gets in, the other
    /// is told it was used; an expired code and an unknown proof are refused, as in SQLite.
    @Test func anInvitationIsRedeemedOnceEvenByTwoRelaysAtOnce() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let location = try PostgresLocation(parsing: server.uri)
        let a = try PostgresReplicaTests.replica(server, schema: "inv")
        defer { a.close() }
        let b = try PostgresReplica.open(at: location, schema: "inv", logger: PostgresReplicaTests.logger)
        defer { b.close() }
        let now: UInt64 = 1_700_000_000_000
        try a.addInvite(secret: [1, 2, 3], name: "garage", now: now, expiresAt: now + 60_000)
        try a.addInvite(secret: [4, 5], name: nil, now: now, expiresAt: now + 10)
        for round in 0..<5 {
            let secret: [UInt8] = [9, UInt8(round)]
            try a.addInvite(secret: secret, name: "race", now: now, expiresAt: now + 60_000)
            let results = Mutex<[InviteRedemption]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                let replica = i == 0 ? a : b
                let result = try? replica.redeemInvite(now: now + 1, by: .node(UInt64(10 + i))) { $0 == secret }
                if let result { results.withLock { $0.append(result) } }
            }
            let got = results.withLock { $0 }
            #expect(got.count == 2)
            #expect(got.filter { if case .admitted = $0 { true } else { false } }.count == 1, "round \(round): \(got)")
            #expect(got.contains(.used(at: now + 1)), "round \(round): \(got)")
        }
        #expect(try a.redeemInvite(now: now + 20, by: .node(3)) { $0 == [4, 5] } == .expired(at: now + 10))
        #expect(try a.redeemInvite(now: now + 20, by: .node(3)) { $0 == [7] } == .unknown)
        guard
            case .admitted(let record) = try b.redeemInvite(now: now + 30, by: .node(3), matches: { $0 == [1, 2, 3] })
        else {
            Issue.record("the garage's invite was not admitted")
            return
        }
        #expect(record.name == "garage" && record.usedBy == .node(3) && record.usedAt == now + 30)
        #expect(try a.invites().first { $0.secret == [1, 2, 3] }?.usedBy == .node(3))
    }

    /// What a running node saves of its peers in one call (records, members' reports, names)
    /// and its latest local changes read as the SQLite store's.
    @Test func savedPeersAndLocalChangesReadAsInSQLite() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-peers")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pg = try PostgresReplicaTests.replica(server, schema: "peers")
        defer { pg.close() }
        let sqlite = try PostgresReplicaTests.sqlite(dir, "r")
        let stores: [any ReplicaStorage] = [pg, sqlite]
        let wall: UInt64 = 1_700_000_000_000
        for store in stores {
            for n in 0..<7 {
                try store.apply(
                    n < 5
                        ? .create(type: "t", assignments: [.set(.named("a"), .integer(Int64(n)))])
                        : .update([.set(.named("b"), .string("x\(n)"))]),
                    to: .named("i\(n % 5)"),
                    wallMilliseconds: wall + UInt64(n)
                )
            }
            try store.savePeers(
                [
                    PeerRecord(nodeID: .node(3), name: "three", source: .mdns, lastSync: 5),
                    PeerRecord(nodeID: .node(4), source: .relay, lastError: "refused"),
                ],
                reports: [
                    MemberReport(nodeID: .node(3), seen: VersionVector([.node(1): 4]), at: wall),
                    MemberReport(nodeID: .node(1), seen: VersionVector([.node(1): 99]), at: wall),
                ],
                names: [(name: "three", ids: [.node(3), .node(33)])]
            )
        }
        #expect(try pg.peers() == sqlite.peers())
        #expect(try pg.memberReports() == sqlite.memberReports())
        #expect(try pg.memberReports().map(\.nodeID) == [.node(3)])
        #expect(try pg.nodeNames() == sqlite.nodeNames())
        #expect(try pg.nodeNames()[.node(33)] == "three")
        for (limit, seen) in [
            (3, VersionVector([.node(1): 4])), (10, VersionVector()), (2, VersionVector([.node(1): 7])),
        ] {
            let (p, s) = (
                try pg.localChanges(limit: limit, seenBy: seen), try sqlite.localChanges(limit: limit, seenBy: seen)
            )
            #expect(p.recent == s.recent && p.above == s.above && p.atOrBelow == s.atOrBelow, "\(p) \(s)")
        }
        // Past counter 4: the two fields of i4's creation (counter 5), then the edits 6 and 7.
        #expect(try pg.localChanges(limit: 3, seenBy: VersionVector([.node(1): 4])).above == 4)
    }
}

/// `to` takes what `from` has and it lacks, as one whole session's stream.
func syncOnce(from: any ReplicaStorage, to: any ReplicaStorage, wallMilliseconds: UInt64) throws {
    let sender = try from.info()
    try to.meet(sender.nodeID, incarnation: sender.writerID)
    var stream = try from.deltaStream(
        for: try to.versionVector(),
        maxUpdates: 50,
        budgetBytes: 2 << 20,
        unclaimed: true,
        deltaBase: nil
    )
    while let batch = try stream.next(peerHolds: VersionVector()) {
        try to.receive(
            batch,
            from: sender.nodeID,
            incarnation: sender.writerID,
            wallMilliseconds: wallMilliseconds,
            refuse: nil,
            revoked: RevokedWriters(),
            writers: .standard,
            allowance: nil,
            rejoinedAt: nil,
            completingStream: false
        )
    }
    try to.completeStream(from: sender.nodeID, rejoinedAt: nil)
}
