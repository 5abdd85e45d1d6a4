public import LansyncCore
public import Logging
import NIOCore
import PostgresNIO

/// Which of several relays settles conflicts, decided in PostgreSQL: a lease with a fencing
/// epoch, and a ledger of every settlement made under it (Docs/RELAY.md, "Several relays, one
/// authority"; the schema there).
///
/// Each relay process runs one. The lease is one row (`lansync_lease`): the relay holding it
/// renews it every third of its time, by PostgreSQL's clock alone, so the relays' own clocks
/// never matter; a relay that stops renewing loses it when its time runs out, and the next relay
/// to take it gets the next epoch. Every settlement is recorded in `lansync_settlement` in a
/// transaction that first locks the lease row as held by this relay at this epoch (`FOR SHARE`):
/// a relay whose lease lapsed cannot record anything, and no other relay can take the lease
/// while such a transaction is open. The ledger's key is the conflict itself (item, field and the
/// dots of the concurrent versions), so a conflict is decided once: a relay that meets the same
/// conflict later (a new holder after a failover, the old holder's replica catching up) reads
/// the decision and writes the same value.
///
/// Guarantees: ``decide(_:)`` returns only values recorded under a lease this relay held when
/// the record committed, and for a given conflict always the same value, whichever relay asks.
public actor PostgresAuthority {
    /// Where this relay stands.
    public enum Standing: Sendable, Equatable {
        case starting
        /// This relay settles conflicts.
        case holding(epoch: Int64)
        /// Another relay does (its holder text); this one leaves conflicts to it.
        case following(holder: String, epoch: Int64)
        /// PostgreSQL cannot be reached: no relay settles through this one meanwhile.
        case unreachable(String)
    }

    /// A conflict, as the ledger keys it.
    public struct Conflict: Sendable, Hashable {
        public var item: String
        public var field: String
        /// The concurrent versions' dots, sorted (`NODE:COUNTER,...`).
        public var siblings: String
        /// The value the relay's policy picks (nil: the field removed).
        public var proposed: Value?

        public init(item: ItemID, field: FieldName, dots: [Dot], proposed: Value?) {
            self.item = item.rawValue
            self.field = field.rawValue
            self.siblings = dots.map { "\($0.node.text):\($0.counter)" }.sorted().joined(separator: ",")
            self.proposed = proposed
        }
    }

    let location: PostgresLocation
    /// The lease's name: one lease per cluster, so clusters may share a database.
    let name: String
    /// This process, as the lease row names it: a new text per start, so a restarted relay never
    /// takes over its previous life's epoch.
    public let holder: String
    let lease: Duration
    let logger: Logger
    private var leaseConnection: WatchedConnection?
    private var decisionConnection: WatchedConnection?
    public private(set) var standing = Standing.starting
    /// Until when this relay may count on holding the lease, by its own clock: a renewal's start
    /// plus four fifths of the lease, well before PostgreSQL's expiry.
    private var heldUntil: ContinuousClock.Instant?
    private var connectionIDs = 0

    public init(location: PostgresLocation, name: String, holder: String, lease: Duration, logger: Logger) {
        self.location = location
        self.name = name
        self.holder = holder
        self.lease = lease
        self.logger = logger
    }

    /// Whether this relay holds the lease now (its own deadline included).
    public var holds: Bool {
        guard case .holding = standing, let heldUntil else { return false }
        return ContinuousClock.now < heldUntil
    }

    /// Keeps or seeks the lease until the calling task is cancelled, every third of the lease;
    /// `acquired` runs each time this relay starts holding it (to settle what waited). Gives the
    /// lease up on the way out, so another relay takes over at its next look.
    public func run(acquired: @escaping @Sendable () async -> Void) async {
        while !Task.isCancelled {
            let before = standing
            await look()
            report(from: before)
            if case .holding = standing, !Self.sameHolding(before, standing) { await acquired() }
            try? await Task.sleep(for: lease / 3)
        }
        await Task.detached { [self] in await self.release() }.value
    }

    /// Records `conflict`'s settlement (its proposed value) unless one is recorded already, and
    /// returns the recorded value. Throws when this relay does not hold the lease at this moment
    /// in PostgreSQL, or PostgreSQL cannot be reached: the conflict stays open.
    public func decide(_ conflict: Conflict) async throws(PostgresProblem) -> Value? {
        guard case .holding(let epoch) = standing else { throw PostgresProblem("this relay does not hold the lease") }
        // One decision at a time: they share a connection, and postgres-nio's transaction is
        // BEGIN, the queries, COMMIT with nothing to keep another's statements out between them.
        await takeDecisionTurn()
        defer { passDecisionTurn() }
        let (name, holder, logger) = (self.name, self.holder, self.logger)
        do {
            let watched = try await connected(.decision)
            // Bounded: a decision that never ends would hold the turn, and every later one, for good.
            return try await watched.answer(within: Self.answerBound) { (answered: EventLoopPromise<Value?>) in
                answered.completeWithTask {
                    try await Self.record(
                        conflict,
                        epoch: epoch,
                        on: watched.connection,
                        name: name,
                        holder: holder,
                        logger: logger
                    )
                }
            }.get()
        } catch {
            // A broken connection is opened again next time.
            if decisionConnection?.isClosed == true { await drop(.decision) }
            throw PostgresProblem(error)
        }
    }

    /// How long the authority waits for PostgreSQL's answer before it gives up and closes the
    /// connection: a bound for a server that neither answers nor closes, long past any wait for
    /// a thread (the work runs in tasks, and in a test process whose cooperative threads are held
    /// by blocking tests, a look at the lease bounded by a 5 s lease failed in CI). A connection
    /// that closes fails its answer at once (``WatchedConnection``), which is what a restart does.
    static let answerBound = TimeAmount.minutes(10)

    /// Records `conflict`'s settlement under the lease at `epoch`, unless one is recorded; the
    /// recorded value.
    private static func record(
        _ conflict: Conflict,
        epoch: Int64,
        on connection: PostgresConnection,
        name: String,
        holder: String,
        logger: Logger
    ) async throws -> Value? {
        try await connection.withTransaction(logger: logger) { c in
            let fenced = try await c.query(
                """
                SELECT epoch FROM lansync_lease
                WHERE name = \(name) AND holder = \(holder) AND epoch = \(epoch) AND expires_at > clock_timestamp()
                FOR SHARE
                """,
                logger: logger
            )
            var held = false
            for try await _ in fenced { held = true }
            guard held else { throw PostgresProblem("the lease lapsed (epoch \(epoch))") }
            let proposed = conflict.proposed.map { Self.encoded($0) }
            try await c.query(
                """
                INSERT INTO lansync_settlement (item, field, siblings, value, epoch, holder, lease)
                VALUES (
                    \(conflict.item), \(conflict.field), \(conflict.siblings), \(proposed), \(epoch), \(holder), \(name)
                )
                ON CONFLICT (item, field, siblings) DO NOTHING
                """,
                logger: logger
            )
            let recorded = try await c.query(
                """
                SELECT value FROM lansync_settlement
                WHERE item = \(conflict.item) AND field = \(conflict.field) AND siblings = \(conflict.siblings)
                """,
                logger: logger
            )
            for try await (value) in recorded.decode((ByteBuffer?).self) {
                return try value.map(Self.decoded)
            }
            throw PostgresProblem("the settlement was not recorded")
        }
    }

    /// Removes this cluster's settlements made more than `age` ago, and says how many went;
    /// only the holder does it (nothing, and 0, otherwise). The node passes the cluster's away
    /// window and its margin: a member silent that long rejoins from a snapshot, and re-issues
    /// what it kept aside under a new writer, so no replica can bring one of those conflicts
    /// (those exact dots) back without its resolution, and the ledger need not answer for it.
    public func forget(settledBefore age: Duration) async throws(PostgresProblem) -> Int {
        guard holds else { return 0 }
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
        // A connection of its own, for this one statement: on the lease's, a long delete would
        // hold a renewal back; on the decisions', it could fall inside a decision's transaction.
        let watched: WatchedConnection
        do { watched = WatchedConnection(try await open()) } catch { throw PostgresProblem(error) }
        let (name, logger) = (self.name, self.logger)
        var forgotten: Result<Int, PostgresProblem> = .success(0)
        do {
            let count = try await watched.answer(within: Self.answerBound) { (answered: EventLoopPromise<Int>) in
                answered.completeWithTask {
                    let rows = try await watched.connection.query(
                        """
                        WITH gone AS (
                            DELETE FROM lansync_settlement
                            WHERE (lease = \(name) OR (lease IS NULL AND (SELECT count(*) FROM lansync_lease) = 1))
                                AND settled_at < clock_timestamp() - make_interval(secs => \(seconds))
                            RETURNING 1
                        )
                        SELECT count(*) FROM gone
                        """,
                        logger: logger
                    )
                    var count = 0
                    for try await found in rows.decode(Int.self) { count = found }
                    return count
                }
            }.get()
            forgotten = .success(count)
        } catch {
            forgotten = .failure(PostgresProblem(error))
        }
        let connection = watched.connection
        try? await connection.close()
        return try forgotten.get()
    }

    private var deciding = false
    private var waitingToDecide: [CheckedContinuation<Void, Never>] = []

    private func takeDecisionTurn() async {
        guard deciding else {
            deciding = true
            return
        }
        await withCheckedContinuation { waitingToDecide.append($0) }
    }

    /// Hands the turn to the next waiting decision, or frees it.
    private func passDecisionTurn() {
        if waitingToDecide.isEmpty { deciding = false } else { waitingToDecide.removeFirst().resume() }
    }

    // MARK: The lease

    /// One renewal, or one attempt to take the lease.
    private func look() async {
        let started = ContinuousClock.now
        let (name, holder, lease, logger) = (self.name, self.holder, self.lease, self.logger)
        do {
            let watched = try await connected(.lease)
            let seen = try await watched.answer(within: Self.answerBound) { (answered: EventLoopPromise<Standing>) in
                answered.completeWithTask {
                    try await Self.take(
                        name: name,
                        holder: holder,
                        lease: lease,
                        on: watched.connection,
                        logger: logger
                    )
                }
            }.get()
            standing = seen
            heldUntil = if case .holding = seen { started + lease * 4 / 5 } else { nil }
        } catch {
            await drop(.lease)
            standing = .unreachable(PostgresProblem(error).description)
        }
    }

    /// Renews the lease for `holder`, or takes it if it ran out; where this relay stands then.
    private static func take(
        name: String,
        holder: String,
        lease: Duration,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Standing {
        let milliseconds = Int64(
            lease.components.seconds * 1000 + lease.components.attoseconds / 1_000_000_000_000_000
        )
        let taken = try await connection.query(
            """
            INSERT INTO lansync_lease AS l (name, holder, epoch, expires_at)
            VALUES (\(name), \(holder), 1, clock_timestamp() + \(milliseconds)::float8 * interval '1 millisecond')
            ON CONFLICT (name) DO UPDATE SET
                holder = excluded.holder,
                epoch = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp()
                    THEN l.epoch ELSE l.epoch + 1 END,
                expires_at = excluded.expires_at
            WHERE (l.holder = excluded.holder AND l.expires_at > clock_timestamp())
                OR l.expires_at <= clock_timestamp()
            RETURNING l.epoch
            """,
            logger: logger
        )
        for try await (epoch) in taken.decode(Int64.self) { return .holding(epoch: epoch) }
        let current = try await connection.query(
            "SELECT holder, epoch FROM lansync_lease WHERE name = \(name)",
            logger: logger
        )
        for try await (other, epoch) in current.decode((String, Int64).self) {
            return .following(holder: other, epoch: epoch)
        }
        return .following(holder: "?", epoch: 0)
    }

    /// Gives the lease up if held, and closes both connections.
    public func release() async {
        if case .holding = standing, let watched = leaseConnection {
            let (name, holder, logger) = (self.name, self.holder, self.logger)
            _ = try? await watched.answer(within: Self.answerBound) { (answered: EventLoopPromise<Void>) in
                answered.completeWithTask {
                    try await watched.connection.query(
                        "UPDATE lansync_lease SET expires_at = clock_timestamp() WHERE name = \(name) AND holder = \(holder)",
                        logger: logger
                    )
                }
            }.get()
            logger.notice("this relay gave up the lease: another relay settles conflicts from now")
        }
        standing = .starting
        heldUntil = nil
        await drop(.lease)
        await drop(.decision)
    }

    /// One look now (renew, or try to take the lease), for tests and the first start.
    public func lookNow() async { await look() }

    private static func sameHolding(_ a: Standing, _ b: Standing) -> Bool {
        if case .holding(let x) = a, case .holding(let y) = b { return x == y }
        return false
    }

    /// One log line per change of standing.
    private func report(from before: Standing) {
        guard before != standing else { return }
        switch standing {
        case .starting: break
        case .holding(let epoch):
            logger.notice("this relay holds the lease (epoch \(epoch), \(location)): it settles conflicts")
        case .following(let other, let epoch):
            if case .following(let was, _) = before, was == other { return }
            logger.notice("relay '\(other)' holds the lease (epoch \(epoch)): this relay leaves conflicts to it")
        case .unreachable(let why):
            if case .unreachable = before { return }
            logger.warning(
                "PostgreSQL at \(location) cannot be reached (\(why)): this relay settles nothing until it is back"
            )
        }
    }

    // MARK: Connections

    /// The lease's renewals and the decisions go over connections of their own: a decision's
    /// transaction must never take a renewal in.
    private enum Slot { case lease, decision }

    private func connected(_ slot: Slot) async throws -> WatchedConnection {
        if let connection = self.connection(slot), !connection.isClosed { return connection }
        let connection = WatchedConnection(try await open())
        // The actor is reentrant while `open` waits: another call may have opened this slot's
        // connection meanwhile. Keep that one and close this (postgres-nio asserts on a
        // connection dropped open, and in a release build it would stay open for ever).
        if let other = self.connection(slot), !other.isClosed {
            try? await connection.connection.close()
            return other
        }
        set(slot, connection)
        return connection
    }

    private func connection(_ slot: Slot) -> WatchedConnection? {
        switch slot {
        case .lease: leaseConnection
        case .decision: decisionConnection
        }
    }

    private func set(_ slot: Slot, _ connection: WatchedConnection?) {
        switch slot {
        case .lease: leaseConnection = connection
        case .decision: decisionConnection = connection
        }
    }

    private func drop(_ slot: Slot) async {
        let connection = self.connection(slot)
        set(slot, nil)
        try? await connection?.connection.close()
    }

    /// A connection to the first host that answers (and, with `target_session_attrs=read-write`,
    /// accepts writes), with the schema in place.
    private func open() async throws -> PostgresConnection {
        connectionIDs += 1
        let logger = self.logger
        // A host where the tables cannot be made (a user that may not create them) is left for
        // the next, its connection closed.
        return try await PostgresConnector(location: location, logger: logger).connect(id: connectionIDs) {
            connection in
            let made = connection.eventLoop.makePromise(of: Void.self)
            made.completeWithTask {
                try await Self.createSchema(connection, logger: logger)
                // A transaction left open (a decision whose client went silent) holds the lease
                // row's share lock, so no relay could renew or take the lease: the server ends it
                // within a minute, as it does the replica's. A statement runs at most a minute.
                try await connection.query("SET idle_in_transaction_session_timeout = '60s'", logger: logger)
                try await connection.query("SET statement_timeout = '60s'", logger: logger)
            }
            return made.futureResult
        }.get()
    }

    /// The two tables, made once; relays starting together take turns (an advisory lock), as
    /// two `CREATE TABLE IF NOT EXISTS` at once can collide.
    static func createSchema(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { c in
            try await c.query("SELECT pg_advisory_xact_lock(7420)", logger: logger)
            try await c.query(
                """
                CREATE TABLE IF NOT EXISTS lansync_lease (
                    name text PRIMARY KEY,
                    holder text NOT NULL,
                    epoch bigint NOT NULL,
                    expires_at timestamptz NOT NULL
                )
                """,
                logger: logger
            )
            try await c.query(
                """
                CREATE TABLE IF NOT EXISTS lansync_settlement (
                    item text NOT NULL,
                    field text NOT NULL,
                    siblings text NOT NULL,
                    value bytea,
                    epoch bigint NOT NULL,
                    holder text NOT NULL,
                    settled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    PRIMARY KEY (item, field, siblings)
                )
                """,
                logger: logger
            )
            // Which lease (cluster) a settlement was made under, so that ``forget(settledBefore:)``
            // applies one cluster's window to its own rows; null on rows made before it. Asked
            // of the catalogue first: `ALTER TABLE` and `CREATE INDEX` lock the table even when
            // there is nothing to do, and every connection a relay opens comes through here.
            let missing = try await c.query(
                """
                SELECT
                    NOT EXISTS (
                        SELECT 1 FROM information_schema.columns
                        WHERE table_schema = current_schema() AND table_name = 'lansync_settlement'
                            AND column_name = 'lease'
                    ),
                    to_regclass('lansync_settlement_by_time') IS NULL
                """,
                logger: logger
            )
            var (column, index) = (true, true)
            for try await row in missing.decode((Bool, Bool).self) { (column, index) = row }
            if column {
                try await c.query("ALTER TABLE lansync_settlement ADD COLUMN lease text", logger: logger)
            }
            if index {
                try await c.query(
                    "CREATE INDEX lansync_settlement_by_time ON lansync_settlement (settled_at)",
                    logger: logger
                )
            }
        }
    }

    // MARK: Values

    static func encoded(_ value: Value) -> ByteBuffer {
        var writer = ByteWriter()
        writer.value(value)
        return ByteBuffer(bytes: writer.bytes)
    }

    static func decoded(_ buffer: ByteBuffer) throws -> Value {
        var reader = ByteReader(Array(buffer.readableBytesView))
        do {
            return try reader.value()
        } catch {
            throw PostgresProblem("a settlement's value in PostgreSQL is not a lansync value: \(error)")
        }
    }
}
