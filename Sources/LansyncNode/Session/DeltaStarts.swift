import CoreMetrics
import LansyncCore
import LansyncReplica
import NIOConcurrencyHelpers

/// The opening read of a delta (its plan, its first batches, the size it announces), shared by
/// the sessions that ask for the same one while the replica has not changed: a relay whose
/// members are all up to date reads a change once for all of them, not once per member.
///
/// Two sessions' reads are the same read when they plan against the same peer vector, with the
/// same delta base and the same kind of delta, and neither session has heard of a change the
/// other's read may predate. Every request carries the hub's generation
/// (``ChangeHub/generation``), which each announced change moves before it wakes any session, and
/// a read is shared only with requests of the generation it was started in. A read started once
/// generation G was seen sees every change announced up to G (each is committed before it is
/// announced): all that a session of generation G could ask its own read to see. A later change
/// moves the generation, so nobody is handed a read from before it. (A session that read the
/// replica's vector itself may know of a commit not yet announced; a read shared before that
/// commit claims nothing of it, and the announcement, which every commit gets from the nudge or
/// the node's poll, wakes the session for it.) A session's first delta is never shared
/// (``SessionDriver``), and a failed read is not handed out again.
final class DeltaStarts: Sendable {
    /// What makes two opening reads the same read. The cheap fields come first: the synthesized
    /// `==` compares in declaration order and stops at the first difference, and two requests
    /// whose vectors differ almost always differ in their fingerprint.
    struct Request: Sendable, Equatable {
        let generation: UInt64
        let initial: Bool
        let announce: Bool
        /// A hash of the vectors (of their digests: no pass over their entries), taken once per
        /// request: a read is looked for among the kept ones by it, and only a match is
        /// compared whole.
        let fingerprint: Int
        let peer: VersionVector
        let deltaBase: VersionVector?

        init(generation: UInt64, initial: Bool, announce: Bool, peer: VersionVector, deltaBase: VersionVector?) {
            (self.generation, self.initial, self.announce) = (generation, initial, announce)
            (self.peer, self.deltaBase) = (peer, deltaBase)
            var hasher = Hasher()
            hasher.combine(peer)
            hasher.combine(deltaBase)
            fingerprint = hasher.finalize()
        }

        /// Equal but for the vectors, which this leaves to `==`.
        func mayEqual(_ other: Request) -> Bool {
            generation == other.generation && fingerprint == other.fingerprint && initial == other.initial
                && announce == other.announce
        }
    }

    /// A delta's opening read: the stream (to go on reading from), the size to announce, and
    /// the batches read so far (nil: the delta ends there).
    struct Start: Sendable {
        var stream: any DeltaSource
        var size: Int
        var ahead: [DeltaBatch?]
    }

    /// The reads of the newest generation asked for, started or done, at most ``kept``.
    private let recent = NIOLockedValueBox<[(request: Request, read: Task<Start, any Error>)]>([])
    private let counts = NIOLockedValueBox((reads: 0, shared: 0))
    private let readsOwn = Counter(label: "lansync_delta_reads_total", dimensions: [("read", "own")])
    private let readsShared = Counter(label: "lansync_delta_reads_total", dimensions: [("read", "shared")])

    /// How many reads of one generation are kept: sessions whose peers stand at different points
    /// ask for different reads, and most of a large relay's members stand at one or two. Each
    /// holds a batch or two (at most about `WireLimits.batchBudgetBytes` each) until a later
    /// generation's request drops it.
    static let kept = 4

    /// The read `request` names: one already started in this generation, else `read()`, started
    /// now and kept for the requests that follow. `shared` says which. The vectors are compared
    /// outside the lock (a relay's members each hold every writer: a thousand sessions comparing
    /// them in turn under one lock was a queue).
    func start(
        _ request: Request,
        read: @escaping @Sendable () async throws -> Start
    ) async throws -> (start: Start, shared: Bool) {
        let candidates = recent.withLockedValue { $0.filter { $0.request.mayEqual(request) } }
        let task: Task<Start, any Error>
        let shared: Bool
        if let found = candidates.first(where: { $0.request == request }) {
            (task, shared) = (found.read, true)
        } else {
            (task, shared) = recent.withLockedValue { recent -> (Task<Start, any Error>, Bool) in
                // Another session may have started it meanwhile (a fingerprint seldom matches
                // without the rest, so this compares whole only then).
                if let found = recent.first(where: { $0.request.mayEqual(request) && $0.request == request }) {
                    return (found.read, true)
                }
                let task = Task { try await read() }
                // A session still on an older generation reads for itself: nobody who has heard
                // of the newer one asks for its read, and it must not push theirs out.
                if recent.contains(where: { $0.request.generation > request.generation }) { return (task, false) }
                recent.removeAll { $0.request.generation < request.generation }
                if recent.count >= Self.kept { recent.removeFirst() }
                recent.append((request, task))
                return (task, false)
            }
        }
        counts.withLockedValue {
            $0.reads += 1
            if shared { $0.shared += 1 }
        }
        (shared ? readsShared : readsOwn).increment()
        do {
            return (try await task.value, shared)
        } catch {
            // A failed read is not handed out again: the next session to ask reads anew.
            recent.withLockedValue { $0.removeAll { $0.read == task } }
            throw error
        }
    }

    /// How many opening reads were asked for, and how many of them another session had read.
    var tally: (reads: Int, shared: Int) { counts.withLockedValue { $0 } }
}
