import CoreMetrics
import Foundation
import LansyncCore
import LansyncDiscovery
import LansyncIdentity
import LansyncJSON
import LansyncReplica
import LansyncTransport
import LansyncWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

// Change inputs: how the node learns that its replica changed (its own sessions, the CLI and API in
// this process, commits by other processes) and wakes the sessions that have something to send,
// plus the anti-entropy rounds.
extension Node {
    /// Tells every session the replica changed (a local edit, a settlement), at once; then reads
    /// the version vector for the hub. The sessions read the replica themselves
    /// for this change, so the edit goes out without waiting for that read (0.2 ms of W5's path).
    func announceChange() async {
        hub.notifyUnread()
        await learnVersion()
    }

    /// Reads the version vector for the hub after a change announced unread.
    func learnVersion() async {
        let store = self.store
        if let version = try? await io.run({ try store.versionVector() }) { hub.learn(version: version) }
    }

    /// Every anti-entropy interval, wakes the sessions whose peer is not known to hold all this
    /// replica holds (they send what it lacks); an idle node wakes none.
    func antiEntropy() async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: options.antiEntropyInterval)
            hub.wakeLagging()
        }
    }

    /// Notices replica changes nobody announced (an edit while the control socket was down). It
    /// looks at the store's quick change mark first (for a SQLite file, two `stat` calls): only
    /// when it moved does it read the version vector, so an idle node costs next to nothing.
    ///
    /// A read that fails for want of the storage (``LansyncStore/StoreError/io(_:)``) is tried
    /// again at the next interval, and the node goes on: a replica in PostgreSQL is out of reach
    /// while its server restarts, and the sessions and the relay's other work come back by
    /// themselves once it answers. Any other failure (a damaged file) stops the node, as before.
    func pollForChanges() async throws {
        let store = self.store
        var last = try await io.run { try store.versionVector() }
        var lastMark = store.quickChangeMark()
        var failing = false
        while !Task.isCancelled {
            try await Task.sleep(for: options.pollInterval)
            let mark = store.quickChangeMark()
            guard mark != lastMark else { continue }
            let now: VersionVector
            do {
                now = try await io.run { try store.versionVector() }
            } catch StoreError.io(let problem) {
                // Out of reach (a server restarting, a lost connection): said once, tried again.
                if !failing {
                    logger.warning(
                        "could not read the replica's version vector (trying again every \(options.pollInterval)): \(problem)"
                    )
                }
                failing = true
                continue
            }
            if failing { logger.notice("the replica answers again") }
            failing = false
            lastMark = mark
            if now != last {
                last = now
                hub.notify(version: now)
            }
        }
    }

    /// Acts on what another process committed to a replica it shares with this one (relay
    /// processes on one replica in PostgreSQL), as the store hears of it: its sessions are told of
    /// a change, and the relay settles what the change brought (a conflict that another process's
    /// batch completed is this one's to settle when it holds the lease); a statement (a
    /// revocation) is taken in as one a peer brought.
    func followCommitsElsewhere() async {
        guard let commits = store.commitsElsewhere() else { return }
        for await commit in commits {
            switch commit {
            case .replica:
                await announceChange()
                settleSoon()
            case .statements: await statementsLearned(await statements.reload())
            }
        }
    }
}
