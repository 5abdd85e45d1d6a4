import LansyncCore
import LansyncStore
import LansyncWire
import Logging

// Causal stability and collection (Docs/MERGE.md, "Causal stability and collection"): what the
// node learns of its members' progress, and the rounds that collect below the stable frontier.
extension Node {
    /// Records what a hello teaches of the members' progress: the peer's own vector as of now,
    /// and the reports it gossips (a one-shot sync is no member's session, and teaches nothing).
    func learnReports(from hello: Hello) async {
        guard hello.role != .oneShot else { return }
        let now = WallClock.milliseconds
        let reports =
            [MemberReport(nodeID: hello.nodeID, seen: hello.versionVector, at: now)]
            + hello.reports.filter { $0.at <= now }.map { MemberReport(nodeID: $0.nodeID, seen: $0.seen, at: $0.at) }
        let store = self.store
        do {
            try await io.run { try store.recordReports(reports) }
        } catch {
            logger.warning("could not record what \(hello.name) reports of the members' progress: \(error)")
        }
    }

    /// Every collection interval, one collection round; logs what it collected.
    func collectPeriodically() async throws {
        let store = self.store
        while !Task.isCancelled {
            try await Task.sleep(for: options.collectInterval)
            do {
                let round = try await io.run { try store.collect(now: WallClock.milliseconds) }
                if round.collected > 0 {
                    logger.info(
                        "collected \(round.collected) deleted item(s) every member has seen deleted; \(round.pagesFreed) page(s) returned to the file system"
                    )
                }
            } catch {
                logger.warning("collection round failed (the next one tries again): \(error)")
            }
        }
    }
}
