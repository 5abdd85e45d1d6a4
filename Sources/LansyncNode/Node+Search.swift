import LansyncReplica
import Logging
import NIOConcurrencyHelpers

// The search texts (Docs/STORAGE.md, "Search") are written after the fact, not by the
// transactions that change fields: an edit or a sync commits without them, and the node writes
// them once the replica has been quiet for a moment. A search in between reads the few changed
// items from their fields, so it is never wrong, only cheaper once the texts are in.
extension Node {
    /// Every search interval, if the texts are behind: when nothing changed since the last look
    /// and no session moved field states meanwhile (a stream sending the replica to a new member
    /// goes first), catches them up in batches until done (stopping if a change arrives);
    /// when changes keep coming for longer than ``catchUpWithin``, one batch per look, so a long
    /// stream of changes cannot leave the texts behind for ever.
    func writeSearchTextsWhenQuiet() async throws {
        let store = self.store
        var lastLatest: Int64?
        var behindSince: ContinuousClock.Instant?
        while !Task.isCancelled {
            try await Task.sleep(for: options.searchInterval)
            guard let backlog = try? await upkeep.run({ try store.searchBacklog() }), !backlog.isEmpty else {
                behindSince = nil
                await keepDigestCurrent()
                continue
            }
            let quiet = backlog.latest == lastLatest && !sessionsMovedRecently()
            lastLatest = backlog.latest
            let since = behindSince ?? .now
            behindSince = since
            guard quiet || ContinuousClock.now - since >= Self.catchUpWithin else { continue }
            do {
                var now = try await writeSearchBatch()
                while quiet, !now.isEmpty, now.latest == backlog.latest, !sessionsMovedRecently(), !Task.isCancelled {
                    now = try await writeSearchBatch()
                }
                if now.isEmpty { behindSince = nil }
            } catch {
                logger.warning("could not write the search texts (the next look tries again): \(error)")
            }
        }
    }

    /// Writes one batch of texts, then rests as long as it took: background upkeep takes at most
    /// half of one core, so the page, the API and sessions stay responsive on a small machine
    /// while a large import's texts are written.
    private func writeSearchBatch() async throws -> SearchBacklog {
        let store = self.store
        let started = ContinuousClock.now
        let backlog = try await upkeep.write { try store.catchUpSearch(fields: Self.searchBatch) }
        try await Task.sleep(for: ContinuousClock.now - started)
        return backlog
    }

    /// Whether a session moved field states within the last search interval.
    func sessionsMovedRecently() -> Bool {
        guard let last = lastTraffic.withLockedValue({ $0 }) else { return false }
        return ContinuousClock.now - last < options.searchInterval
    }

    /// Fields whose items' texts one transaction writes: a session's commit waits at most about
    /// 30 ms for the write lock (here), and FTS5 writes a segment per transaction, so smaller
    /// batches cost more in all (1,024: the W1 dataset's texts in 11.4 s of writing, not 8.3).
    static var searchBatch: Int { 4096 }

    /// The longest the search texts stay behind while changes keep arriving.
    static var catchUpWithin: Duration { .seconds(30) }

    /// Brings the digest `status` shows up to date while the replica is quiet (the texts caught
    /// up): the first time it reads every item (seconds at 100,000 items, better spent here than
    /// by the first `status` or page that asks), after that the items changed since.
    func keepDigestCurrent() async {
        let store = self.store
        let digests = self.digests
        _ = try? await upkeep.run { try digests.digest(store) }
    }
}
