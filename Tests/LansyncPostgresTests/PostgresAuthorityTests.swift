import LansyncCore
import LansyncTestSupport
import Logging
import Testing

@testable import LansyncPostgres

/// The lease and the ledger of settlements, on a PostgreSQL server each test starts and stops.
@Suite(.serialized) struct PostgresAuthorityTests {
    /// Long enough that a loaded machine never lets a lease lapse between two steps of a test
    /// (the full suite has stalled a process for more than 10 s); the test of a lapse ends the
    /// lease in the table instead.
    static let lease = Duration.seconds(120)

    /// Relays named `names` on `server`, given to `body`, and their leases given up and
    /// connections closed afterwards, whatever `body` did (a connection left open is a bug
    /// postgres-nio asserts on).
    func withRelays(
        _ names: [String],
        on server: TemporaryPostgres,
        lease: Duration = Self.lease,
        _ body: ([PostgresAuthority]) async throws -> Void
    ) async throws {
        let relays = try names.map { name in
            PostgresAuthority(
                location: try PostgresLocation(parsing: server.uri),
                name: "settle test-cluster",
                holder: name,
                lease: lease,
                logger: Logger(label: "test")
            )
        }
        do {
            try await body(relays)
        } catch {
            for relay in relays { await relay.release() }
            throw error
        }
        for relay in relays { await relay.release() }
    }

    static func conflict(proposing value: Value?, dots: [UInt64] = [3, 5]) -> PostgresAuthority.Conflict {
        PostgresAuthority.Conflict(
            item: ItemID(unchecked: "01a216a6-18ce-70f1-b2a2-293b2b7e97f4"),
            field: FieldName(unchecked: "title"),
            dots: dots.map { Dot(node: NodeID(bytes: Array(repeating: UInt8($0), count: 16)), counter: $0) },
            proposed: value
        )
    }

    @Test func oneRelayHoldsTheLeaseAndTheOtherLeavesConflictsToIt() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a", "b"], on: server) { (relays) async throws -> Void in
            let (a, b) = (relays[0], relays[1])
            await a.lookNow()
            await b.lookNow()
            #expect(await a.standing == .holding(epoch: 1), "\(server.log)")
            #expect(await b.standing == .following(holder: "a", epoch: 1))
            #expect(await !b.holds)
            // The holder decides once; asked again (another relay's policy, the same conflict), the
            // ledger answers with the first decision.
            #expect(try await a.decide(Self.conflict(proposing: .string("from A"))) == .string("from A"))
            #expect(try await a.decide(Self.conflict(proposing: .string("from B"))) == .string("from A"))
            // A removal is a decision too; a conflict with other versions is another conflict.
            #expect(try await a.decide(Self.conflict(proposing: nil, dots: [3, 6])) == nil)
            #expect(try await a.decide(Self.conflict(proposing: .integer(1), dots: [3, 6])) == nil)
            await #expect(throws: PostgresProblem.self) { try await b.decide(Self.conflict(proposing: .string("x"))) }
        }
    }

    /// A holder that stops renewing (a process frozen or cut off) loses the lease when its time
    /// runs out (the test ends it in the table rather than wait, so a loaded machine cannot blur
    /// the order): the next relay takes it with the next epoch, the old holder's decisions are
    /// refused by PostgreSQL although it still thinks it holds, and the new holder settles a
    /// conflict the old one decided with the old decision.
    @Test func aLapsedLeaseIsTakenOverAndFencesTheOldHolderOut() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a", "b"], on: server) { (relays) async throws -> Void in
            let (a, b) = (relays[0], relays[1])
            await a.lookNow()
            #expect(try await a.decide(Self.conflict(proposing: .string("from A"))) == .string("from A"))
            await b.lookNow()
            #expect(await b.standing == .following(holder: "a", epoch: 1))
            await b.lookNow()
            #expect(await b.standing == .following(holder: "a", epoch: 1), "a's lease still runs")
            _ = try server.sql("UPDATE lansync_lease SET expires_at = clock_timestamp()")
            await b.lookNow()
            #expect(await b.standing == .holding(epoch: 2))
            #expect(await a.standing == .holding(epoch: 1), "a has not looked since: it still thinks it holds")
            do {
                _ = try await a.decide(Self.conflict(proposing: .string("late"), dots: [7, 8]))
                Issue.record("a decided under a lapsed lease")
            } catch {
                #expect("\(error)".contains("the lease lapsed"), "\(error)")
            }
            #expect(try await b.decide(Self.conflict(proposing: .string("from B"))) == .string("from A"))
            #expect(try await b.decide(Self.conflict(proposing: .string("from B"), dots: [7, 8])) == .string("from B"))
            // When a looks again it follows b.
            await a.lookNow()
            #expect(await a.standing == .following(holder: "b", epoch: 2))
            #expect(
                try server.sql(
                    "SELECT field, siblings LIKE '%:8', epoch, holder FROM lansync_settlement ORDER BY epoch"
                )
                    == ["title|f|1|a", "title|t|2|b"]
            )
        }
    }

    /// A relay counts on its lease only until four fifths of it have passed since its last
    /// renewal began, by its own clock, well before PostgreSQL's expiry.
    @Test func aHolderStopsCountingOnItsLeaseBeforeItRunsOut() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a"], on: server, lease: .seconds(1)) { (relays) async throws -> Void in
            let a = relays[0]
            await a.lookNow()
            try await Task.sleep(for: .milliseconds(800))
            #expect(await !a.holds)
            #expect(await a.standing == .holding(epoch: 1), "it has not looked since")
        }
    }

    /// PostgreSQL stops (as a crash would) and comes back: the relays say it is unreachable,
    /// decide nothing meanwhile, and reconnect by themselves.
    @Test func relaysReconnectAfterPostgreSQLRestarts() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a"], on: server) { (relays) async throws -> Void in
            let a = relays[0]
            await a.lookNow()
            #expect(await a.standing == .holding(epoch: 1))
            try server.stopServer()
            await a.lookNow()
            guard case .unreachable(let why) = await a.standing else {
                Issue.record("not unreachable: \(await a.standing)")
                return
            }
            #expect(!why.isEmpty)
            await #expect(throws: PostgresProblem.self) { try await a.decide(Self.conflict(proposing: .bool(true))) }
            try server.start()
            await a.lookNow()
            guard case .holding = await a.standing else {
                Issue.record("did not take the lease back: \(await a.standing); \(server.log)")
                return
            }
            #expect(try await a.decide(Self.conflict(proposing: .bool(true))) == .bool(true))
        }
    }

    /// A relay that gives the lease up (a graceful stop) lets the next one take it at its next
    /// look, without waiting for the lease to run out.
    @Test func aReleasedLeaseIsTakenAtOnce() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a", "b"], on: server) { (relays) async throws -> Void in
            let (a, b) = (relays[0], relays[1])
            await a.lookNow()
            await a.release()
            await b.lookNow()
            #expect(await b.standing == .holding(epoch: 2), "at once, though a's lease had two minutes to run")
        }
    }

    /// The holder forgets its cluster's decisions older than it is told, and only those: newer
    /// ones, another cluster's (another lease) and, from a follower, nothing at all.
    @Test func theHolderForgetsItsClustersOldDecisions() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a", "b"], on: server) { (relays) async throws -> Void in
            let (a, b) = (relays[0], relays[1])
            await a.lookNow()
            await b.lookNow()
            _ = try await a.decide(Self.conflict(proposing: .string("old"), dots: [3, 5]))
            _ = try await a.decide(Self.conflict(proposing: .string("new"), dots: [3, 6]))
            _ = try await a.decide(Self.conflict(proposing: .string("older cluster"), dots: [3, 7]))
            _ = try await a.decide(Self.conflict(proposing: .string("before leases were kept"), dots: [3, 8]))
            _ = try server.sql(
                """
                UPDATE lansync_settlement SET settled_at = now() - interval '100 days'
                WHERE siblings <> '\(Self.conflict(proposing: nil, dots: [3, 6]).siblings)'
                """
            )
            // A row of another cluster sharing the database, as old.
            _ = try server.sql(
                "UPDATE lansync_settlement SET lease = 'settle another-cluster' WHERE siblings = '\(Self.conflict(proposing: nil, dots: [3, 7]).siblings)'"
            )
            // A row made by a relay before rows named their lease: with one cluster in the
            // database it is that cluster's.
            _ = try server.sql(
                "UPDATE lansync_settlement SET lease = NULL WHERE siblings = '\(Self.conflict(proposing: nil, dots: [3, 8]).siblings)'"
            )
            #expect(try await b.forget(settledBefore: .seconds(90 * 86_400)) == 0, "a follower forgets nothing")
            #expect(try server.sql("SELECT count(*) FROM lansync_settlement") == ["4"])
            #expect(try await a.forget(settledBefore: .seconds(90 * 86_400)) == 2)
            let left = try server.sql("SELECT coalesce(lease, '-') FROM lansync_settlement ORDER BY 1")
            #expect(left == ["settle another-cluster", "settle test-cluster"], "\(left)")
            // The forgotten conflict, met again, is decided afresh.
            #expect(try await a.decide(Self.conflict(proposing: .string("again"), dots: [3, 5])) == .string("again"))
        }
    }

    /// Two decisions at once on a relay with no decision connection yet: both open one while the
    /// actor waits, and the second used to replace the first, which postgres-nio's debug build
    /// stops the process on (a connection dropped open). One is kept, the other closed.
    @Test func decisionsAtOnceKeepOneConnection() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try await withRelays(["a"], on: server) { (relays) async throws -> Void in
            let a = relays[0]
            await a.lookNow()
            async let first = a.decide(Self.conflict(proposing: .string("one"), dots: [3, 5]))
            async let second = a.decide(Self.conflict(proposing: .string("two"), dots: [3, 6]))
            let values = try await [first, second]
            #expect(values == [.string("one"), .string("two")])
            let open = try server.sql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            #expect(open == ["2"], "the lease's connection and one for decisions: \(open)")
        }
    }
}
