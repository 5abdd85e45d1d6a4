import AsyncAlgorithms
import Foundation
public import LansyncCore
import LansyncIdentity
public import LansyncReplica
public import LansyncTransport
public import LansyncWire
import NIOCore

/// How a session ended.
public struct SessionOutcome: Sendable {
    public init(error: ProtocolError? = nil) { self.error = error }

    public var peer: Hello?
    /// The error this side reported, if any.
    public var error: ProtocolError?
    /// The error the peer reported, if any.
    public var peerError: ProtocolError?
    /// Set if the connection broke (rather than a protocol error).
    public var connectionError: String?
    /// True if the peer held more of this replica's own writer than the replica: it was rolled
    /// back (restored from a backup or snapshot), and has retired that writer.
    public var witnessedRollback = false
    /// True if both sides reached "up to date" at least once.
    public var reachedUpToDate = false
    /// What the peer was known to hold when both sides were last up to date (its hello, what it
    /// sent, what it acknowledged).
    public var peerHolds = VersionVector()
    /// What the session moved, whether it ended cleanly or not: a batch applied just before a
    /// close counts.
    public var counters = SessionCounters()
    /// Writers new to this replica that the peer's batches brought.
    public var newWriters = 0
    /// Entries of the peer's covers naming writers this replica could not verify, left out
    /// (``ReceivedBatch/unverifiedCovers``).
    public var unverifiedCovers = 0
    /// What the peer's batches carried of signed writes (``RunCheck``).
    public var signedWrites = SignedWriteCounts()

    /// A one-line description of why the session ended, nil for a clean end.
    public var failure: String? {
        if let error { return error.description }
        if let peerError { return "peer reported " + peerError.description }
        return connectionError
    }

    /// True if retrying cannot help until someone changes something.
    public var isPermanent: Bool { (error ?? peerError)?.isPermanent ?? false }
}

/// Callbacks through which a running session reports to its node.
public struct SessionObserver: Sendable {
    /// The peer said hello and the machine's checks passed; a non-nil answer refuses the session
    /// with that error before anything of the peer's is taken (a member back from being away).
    public var peerReady: @Sendable (Hello) async -> ProtocolError? = { _ in nil }
    public var upToDate: @Sendable (_ peerVersionVector: VersionVector) async -> Void = { _ in }
    public var progress: @Sendable (Progress) async -> Void = { _ in }
    /// A batch from the peer changed the replica: how many field states it changed.
    public var applied: @Sendable (_ changed: Int) async -> Void = { _ in }
    /// The peer sent its own signed report (protocol 1.13, ``Message/report(_:)``).
    public var reported: @Sendable (Hello.SignedReport) async -> Void = { _ in }

    /// Counters of a session so far.
    public struct Progress: Sendable, Equatable {
        public var counters = SessionCounters()
        /// ``SessionMachine/waitedRoundTrips``.
        public var waitedRoundTrips = 0
        /// The peer's delta under way, when it announced its size: field states expected and
        /// received so far (``SessionMachine/incoming``).
        public var expecting: Int?
        public var receivedOfExpected = 0
        /// What the peer was learnt to hold since the last report (``SessionMachine/peerMoved``):
        /// joined, the reports make ``SessionMachine/peerVersionVector``.
        public var peerMoved = VersionVector()
    }

    public init() {}
}

/// Executes a ``SessionMachine`` on an authenticated connection against the replica: the only
/// place where protocol logic meets sockets and the store.
public struct SessionRunner: Sendable {
    let store: any ReplicaStorage
    let io: BlockingIO
    let hub: ChangeHub
    let config: SessionMachine.SessionConfig
    let observer: SessionObserver
    /// The relay's limits, checked on every incoming field state.
    let refuse: FieldRefusal?
    /// The writes revocations refuse, read for every batch (a revocation may arrive mid-session).
    let revoked: @Sendable () -> RevokedWriters
    /// What the peer's batches may add to the replica's writers.
    let writers: WriterBounds
    /// This node's own report, signed as of now (nil: none to send): sent after each delta that
    /// moved this replica's own writers, to a peer that takes it (protocol 1.13).
    let vouch: @Sendable () async -> Hello.SignedReport?
    /// Whether a signed run's key is a member's (``RunCheck/Certify``): a run with any other key
    /// does not hold.
    let certify: RunCheck.Certify

    /// - Parameter certify: whether a signed run's key is a member's: a node asks the cluster's
    ///   authority (``LansyncIdentity/CertifiedKeys``).
    public init(
        store: any ReplicaStorage,
        io: BlockingIO,
        hub: ChangeHub,
        config: SessionMachine.SessionConfig,
        certify: @escaping RunCheck.Certify,
        observer: SessionObserver = SessionObserver(),
        refuse: FieldRefusal? = nil,
        revoked: @escaping @Sendable () -> RevokedWriters = { RevokedWriters() },
        writers: WriterBounds = .standard,
        vouch: @escaping @Sendable () async -> Hello.SignedReport? = { nil }
    ) {
        self.writers = writers
        self.vouch = vouch
        self.certify = certify
        self.refuse = refuse
        self.revoked = revoked
        self.store = store
        self.io = io
        self.hub = hub
        self.config = config
        self.observer = observer
    }

    /// The check of a peer's batches' signed runs, for this cluster, with members' keys.
    var runCheck: RunCheck {
        RunCheck(
            cluster: config.clusterID,
            verify: { MemberSignature.isValid($0, of: $1, key: $2, forWriter: $3) },
            certify: certify
        )
    }

    /// How often the machine's clock moves (timeouts, keepalives, its own anti-entropy round).
    /// Coarse on purpose: each tick wakes the session, and the node's anti-entropy at the finer
    /// interval (``ChangeHub/wakeLagging()``) wakes only sessions whose peer lacks something.
    static let tickInterval: Duration = .seconds(5)

    /// Runs the session over `payloads`, the peer's frames as the wire carries them, decoded as a
    /// connection's are (a frame that does not decode is the same protocol error), until they
    /// end (the peer's close); what this side sends goes to `send`. Everything but the socket is
    /// as in ``run(_:)``: the fuzzer of the receive path drives sessions this way.
    public func run(
        payloads: AsyncStream<[UInt8]>,
        send: @escaping @Sendable (Message) async throws -> Void = { _ in }
    ) async -> SessionOutcome {
        let (subscription, _) = hub.subscribe()
        defer { hub.unsubscribe(subscription) }
        var driver = SessionDriver(runner: self, subscription: subscription, wire: WireCounters(), send: send)
        let messages = payloads.map { payload -> SessionDriver.Input in
            do throws(WireError) {
                return .event(.received(try MessageCoder.decode(payload), now: .now))
            } catch {
                return .event(.receivedInvalid(error, now: .now))
            }
        }
        do { try await driver.run(chain(messages, [SessionDriver.Input.peerClosed].async)) } catch {
            var outcome = driver.result
            if outcome.error == nil, outcome.peerError == nil { outcome.connectionError = "\(error)" }
            return outcome
        }
        return driver.result
    }

    /// What a session on a connection reacts to: the peer's messages and then its close, the
    /// regular ticks and those the machine asked for, and this replica's changes.
    private func inputs(
        _ messages: some AsyncSequence<SessionDriver.Input, any Error> & Sendable,
        wakes: AsyncStream<SessionDriver.Input>,
        changes: AsyncStream<Void>,
        subscription: Int
    ) -> some AsyncSequence<SessionDriver.Input, any Error> {
        merge(
            chain(messages, [SessionDriver.Input.peerClosed].async),
            merge(
                AsyncTimerSequence.repeating(every: Self.tickInterval).map { [hub] _ in
                    SessionDriver.Input.event(.tick(now: .now, localVersion: hub.knownVersion))
                },
                wakes
            ),
            changes.map { [hub] in
                SessionDriver.Input.event(
                    .localChanged(
                        localVersion: hub.version(for: subscription),
                        now: .now,
                        eager: hub.eager(for: subscription)
                    )
                )
            }
        )
    }

    /// How long a connection this side refused stays open after the error is sent.
    static let refusalLinger = Duration.milliseconds(250)

    /// Runs the session on `connection` until it ends; says how it ended.
    public func run(_ connection: PeerConnection) async -> SessionOutcome {
        let (subscription, changes) = hub.subscribe()
        defer { hub.unsubscribe(subscription) }
        // Ticks the machine asked for (a `have`'s wait), beside the regular ones.
        let (wakes, waking) = AsyncStream<SessionDriver.Input>.makeStream(bufferingPolicy: .bufferingNewest(4))
        defer { waking.finish() }
        var outcome = SessionOutcome()
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                var driver = SessionDriver(
                    runner: self,
                    subscription: subscription,
                    wire: connection.counters,
                    send: { try await outbound.write($0) },
                    wake: { [hub] delay in
                        Task {
                            try? await Task.sleep(for: delay)
                            waking.yield(.event(.tick(now: .now, localVersion: hub.knownVersion)))
                        }
                    }
                )
                // However the session ends (cleanly, on an error, or closed under a write), the
                // outcome says what it moved.
                defer { outcome = driver.result }
                let messages = inbound.map { incoming -> SessionDriver.Input in
                    switch incoming {
                    case .message(let m): .event(.received(m, now: .now))
                    case .invalid(let e): .event(.receivedInvalid(e, now: .now))
                    }
                }
                try await driver.run(inputs(messages, wakes: wakes, changes: changes, subscription: subscription))
                // This side refused the peer and sent it why: the error is read before the
                // connection closes (closing with the peer's pipelined frames unread resets the
                // connection, and a reset can take the error with it: an older peer refused for
                // its version then saw only "connection closed").
                if driver.result.error != nil { try? await Task.sleep(for: Self.refusalLinger) }
            }
        } catch {
            if outcome.error == nil, outcome.peerError == nil {
                outcome.connectionError = "connection lost: \(TransportError.describing(error))"
            }
        }
        // The bytes the close itself moved too.
        outcome.counters.sentBytes = connection.counters.sent
        outcome.counters.receivedBytes = connection.counters.received
        return outcome
    }
}
