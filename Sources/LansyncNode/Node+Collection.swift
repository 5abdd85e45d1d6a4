import Crypto
import LansyncCore
import LansyncReplica
import LansyncTransport
import LansyncWire
import Logging
import NIOConcurrencyHelpers

// Causal stability and collection (Docs/MERGE.md, "Causal stability and collection"): what the
// node learns of its members' progress, and the rounds that collect below the stable frontier.
extension Node {
    /// Records what a hello teaches of the members' progress: the peer's own vector as of now,
    /// and the reports it gossips (a one-shot sync is no member's session, and teaches nothing).
    ///
    /// Only reports their members signed are taken second-hand (protocol 1.13, issue 64: one
    /// hello carrying a report in another member's name made a replica collect an item that
    /// member had restored); an older peer's unsigned reports teach nothing.
    func learnReports(from hello: Hello) async {
        guard hello.role != .oneShot else { return }
        let now = WallClock.milliseconds
        if hello.version < .signedReports, !hello.reports.isEmpty,
            signedReports.withLockedValue({ $0.toldUnsigned.insert(hello.nodeID).inserted })
        {
            logger.notice(
                "\(hello.name) speaks protocol \(hello.version): its reports of other members are unsigned and not taken (this node takes reports passed on only with their member's signature, 1.13); upgrade it"
            )
        }
        let vouched = validSignedReports(of: hello, now: now)
        // How many members the hello names is a hint for the view's size, as before: every
        // report counts, checked or not.
        await view.heard(of: hello.signedReports.map(\.nodeID) + hello.reports.map(\.nodeID), from: hello.nodeID)
        hub.setClusterSize(await view.heard(sketch: hello.members, from: hello.nodeID))
        let signed = vouched.first { $0.nodeID == hello.nodeID }
        let own = MemberReport(
            nodeID: hello.nodeID,
            seen: hello.versionVector,
            at: now,
            signed: signed?.encoded,
            signedAt: signed?.at ?? 0
        )
        let gossip = vouched.filter { $0.nodeID != hello.nodeID }.map { $0.recorded(now: now) }
        let store = self.store
        do {
            try await io.write {
                try store.recordReports([own], gossiped: false)
                try store.recordReports(gossip, gossiped: true)
                if hello.role == .relay { try store.noteRelay(hello.nodeID) }
            }
        } catch {
            logger.warning("could not record what \(hello.name) reports of the members' progress: \(error)")
        }
    }

    /// The signed reports of `hello` at least as new as the latest this node verified of their
    /// members, each signed by the member it is about, for this cluster, and at most a day ahead
    /// of this machine's clock. A report verified before is not verified again (a hello of a
    /// large cluster carries hundreds, and each costs a signature's verification), but it is
    /// returned again: the store keeps what it did not keep before (``CheckedReports``).
    func validSignedReports(of hello: Hello, now: UInt64) -> [Hello.SignedReport] {
        let checked = signedReports.withLockedValue { $0.checked }
        var valid: [Hello.SignedReport] = []
        var verified: [(Hello.SignedReport, SHA256Digest)] = []
        for report in hello.signedReports where report.at <= now &+ Hello.SignedReport.maxAhead {
            guard let (verify, digest) = checked.triage(report) else { continue }
            if verify {
                guard report.isSigned(in: info.clusterID) else { continue }
                verified.append((report, digest))
            }
            valid.append(report)
        }
        if !verified.isEmpty {
            signedReports.withLockedValue { held in
                for (report, digest) in verified { held.checked.verified(report, digest: digest) }
            }
        }
        return valid
    }

    /// This node's own report, signed: the one last signed while the replica's vector is the
    /// same and that one is under a minute old, else a new one as of now. Nil if the vector
    /// cannot be read or signing fails.
    func ownReport() async -> Hello.SignedReport? {
        let store = self.store
        var known = hub.knownVersion
        if known == nil { known = try? await io.run { try store.versionVector() } }
        guard let vector = known else { return nil }
        let now = WallClock.milliseconds
        if let held = signedReports.withLockedValue({ $0.own }), held.seen == vector, held.at <= now,
            now - held.at < 60_000
        {
            return held
        }
        guard
            let report = Hello.SignedReport.signed(by: identity.signer, cluster: info.clusterID, at: now, seen: vector)
        else { return nil }
        signedReports.withLockedValue { $0.own = report }
        return report
    }

    /// A peer's own signed report, sent after a delta (``Message/report(_:)``): kept to pass on
    /// as a hello's is, under the rules reports passed on meet (its signature checked, not older
    /// than the latest verified of the peer, no further ahead than a day, only the writers this
    /// replica knows), so a member sending many cannot grow a row or hold back its own later
    /// reports.
    /// Only the peer's report of itself counts here.
    func learnOwnReport(_ report: Hello.SignedReport, of peer: NodeID) async {
        let now = WallClock.milliseconds
        guard report.nodeID == peer else { return }
        var hello = Hello(
            nodeID: peer,
            clusterID: info.clusterID,
            role: .peer,
            name: "",
            versionVector: VersionVector()
        )
        hello.signedReports = [report]
        guard let taken = validSignedReports(of: hello, now: now).first else { return }
        let store = self.store
        do {
            try await io.write { try store.recordReports([taken.recorded(now: now)], gossiped: true) }
        } catch {
            logger.warning("could not record the report \(peer.short) signed of its progress: \(error)")
        }
    }

    /// Every collection interval, one collection round; logs what it collected.
    func collectPeriodically() async throws {
        let store = self.store
        if options.role == .relay {
            let me = info.nodeID
            try? await io.write { try store.noteRelay(me) }
        }
        var lastRefresh = ContinuousClock.now
        var settings = CollectionSettings.standard
        // The shared authority's old settlements are forgotten beside the rounds, one look at a
        // time: the database may be slow or gone, and collection must not wait for it.
        let forgetting = NIOLockedValueBox<Task<Void, Never>?>(nil)
        defer { forgetting.withLockedValue { $0?.cancel() } }
        while !Task.isCancelled {
            if let read = try? await io.run({ try store.collectionSettings() }) {
                settings = read
                await registry.setAwayWindow(settings.awayAfter)
            }
            try await Task.sleep(for: options.collectInterval)
            forgetting.withLockedValue { running in
                guard running == nil, authority?.gate != nil else { return }
                running = Task { [settings] in
                    await self.forgetOldSettlements(settings)
                    forgetting.withLockedValue { $0 = nil }
                }
            }
            do {
                let round = try await io.write { try store.collect(now: WallClock.milliseconds) }
                if round.collected > 0 {
                    logger.info(
                        "collected \(round.collected) deleted item(s) every member has seen deleted; \(round.pagesFreed) page(s) returned to the file system"
                    )
                }
                collectionRounds.withLockedValue { $0 += 1 }
                await foldRetiredWriters()
                if ContinuousClock.now - lastRefresh >= max(options.collectInterval, .seconds(10)),
                    await refreshGossip()
                {
                    lastRefresh = .now
                }
            } catch {
                logger.warning("collection round failed (the next one tries again): \(error)")
            }
        }
    }

    /// On the relay that holds the shared authority's lease: the ledger's decisions older than
    /// a silent member may stay away and still sync without a snapshot go (``SettlingGate``).
    func forgetOldSettlements(_ settings: CollectionSettings) async {
        guard let gate = authority?.gate else { return }
        do {
            let forgotten = try await gate.forget(settings.purgeAfter)
            if forgotten > 0 {
                let age = settings.purgeAfter
                let words = age >= CollectionSettings.day ? "\(age / CollectionSettings.day) day(s)" : "\(age / 1000) s"
                logger.info("forgot \(forgotten) settlement(s) of the shared authority made more than \(words) ago")
            }
        } catch {
            logger.warning("could not forget old settlements (the next collection round tries again): \(error)")
        }
    }

    /// Reports of members this node does not meet travel only in hellos. When such a member
    /// holds the frontier back, the sessions open again, so that their hellos bring what the
    /// peers (the relay, in a star) have heard of it since: otherwise a long session would keep
    /// an old report, and collection would wait for it for ever. True if it reopened them.
    func refreshGossip() async -> Bool {
        let store = self.store
        guard let held = try? await io.run({ try store.frontierLaggard(now: WallClock.milliseconds) }),
            held != info.nodeID, !(await registry.isConnected(held)),
            await registry.snapshot().contains(where: \.connected)
        else { return false }
        await registry.reopenAll()
        return true
    }

    /// Folds the writers this node knows are retired once every member has seen all they wrote
    /// and they stayed quiet for a round (``ReplicaStorage/foldRetiredWriters(revoked:unchangedSince:)``);
    /// then, if it folded any or took any from a peer since the last round, opens its sessions
    /// again, once, so that their hellos tell the peers, which fold them in turn (Docs/MERGE.md,
    /// "Retired writers fold").
    func foldRetiredWriters() async {
        let (store, revoked) = (self.store, statements.revokedWriters)
        let previous = foldRound.withLockedValue { $0.vector }
        if let (folded, vector) = try? await io.write({
            try store.foldRetiredWriters(revoked: revoked, unchangedSince: previous)
        }) {
            foldRound.withLockedValue { $0.vector = vector }
            if !folded.isEmpty {
                logger.info(
                    "folded \(folded.counters.count) retired writer(s) every member has seen out of the vectors this node tells: \(folded)"
                )
                foldRound.withLockedValue { $0.toTell = true }
            }
        }
        let tell = foldRound.withLockedValue { round in
            defer { round.toTell = false }
            return round.toTell
        }
        if tell { await registry.reopenAll() }
    }

    /// Takes the folds a peer's hello names that this replica has caught up with; the next
    /// collection round opens its sessions again so that its own peers learn them too (a fold
    /// spreads through the cluster as hellos do, at most one reopening per node and round, and
    /// stops where every member has it).
    func adoptFolds(from hello: Hello) async {
        guard !hello.folded.isEmpty else { return }
        let store = self.store
        do {
            let taken = try await io.write { try store.adoptFolds(hello.folded) }
            guard !taken.isEmpty else { return }
            logger.info("folded \(taken.counters.count) retired writer(s) \(hello.name) folded: \(taken)")
            foldRound.withLockedValue { $0.toTell = true }
        } catch {
            logger.warning("could not fold the writers \(hello.name) folded: \(error)")
        }
    }
}
