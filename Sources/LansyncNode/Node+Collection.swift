import LansyncCore
import LansyncStore
import LansyncWire
import Logging
import NIOConcurrencyHelpers

// Causal stability and collection (Docs/MERGE.md, "Causal stability and collection"): what the
// node learns of its members' progress, and the rounds that collect below the stable frontier.
extension Node {
    /// Records what a hello teaches of the members' progress: the peer's own vector as of now,
    /// and the reports it gossips (a one-shot sync is no member's session, and teaches nothing).
    func learnReports(from hello: Hello) async {
        guard hello.role != .oneShot else { return }
        await view.heard(of: hello.reports.map(\.nodeID), from: hello.nodeID)
        hub.setClusterSize(await view.heard(sketch: hello.members, from: hello.nodeID))
        let now = WallClock.milliseconds
        let own = MemberReport(nodeID: hello.nodeID, seen: hello.versionVector, at: now)
        let gossip = hello.reports.filter { $0.at <= now }.map {
            MemberReport(told: $0, by: hello)
        }
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

extension MemberReport {
    /// A report as `hello` gossips it: with the teller's folds to join back if it was told
    /// without them (``Hello/Report/toldFolded``).
    init(told report: Hello.Report, by hello: Hello) {
        self.init(
            nodeID: report.nodeID,
            seen: report.seen,
            at: report.at,
            folds: report.toldFolded ? hello.folded : VersionVector()
        )
    }
}
