/// What a replica knows of how far the cluster's members have seen, and what of its history is
/// therefore safe to forget (Docs/MERGE.md, "Causal stability and collection").
///
/// A member's *report* is its version vector as of its last session anywhere in the cluster,
/// learned directly in a hello or gossiped by others. The *frontier* is the pointwise minimum of
/// the active members' reports (this replica's own vector among them): every write below it has
/// reached every active member.
///
/// Below the frontier is not yet enough to forget an item. A write `w` concurrent with the
/// delete `d` may still be on its way here: its member made it before it saw `d`, so the report
/// that showed `d` already covered `w`, but this replica may not hold `w` yet. So each time the
/// frontier moves, the ledger keeps a *checkpoint*: the frontier `F` and the join `J` of the reports
/// behind it. Once a later frontier covers `J`, every active member (this replica included) holds
/// every write any of them had made when `F` was reached, so everything below `F` has met every
/// write concurrent with it: that `F` becomes the ledger's ``stable`` vector. (Baquero, Almeida and
/// Shoker, "Making operation-based CRDTs operation-based", causal stability, adapted to a
/// state-based delta protocol that learns vectors instead of receiving operations in causal order.)
///
/// Stability says nothing of writes made *after* a delete, and one such write matters: a
/// restore. A member restores only within the trash window, judged by its own clock; a restore
/// made in time may still reach this replica late (the member was cut off since). So a
/// checkpoint also keeps the time of the oldest report behind it (``Checkpoint/reportedAt``): every
/// member reported after it, so every restore a member made before that moment is in the
/// checkpoint's join, and held here once the checkpoint is stable. A delete older than that time
/// by more than the trash window (and a margin for clock skew) can no longer be restored by
/// anyone: ``stableReportedAt``.
///
/// ``stable`` and ``stableReportedAt`` only grow: reports are joined, never lowered, and
/// checkpoints are only taken up.
public struct StabilityLedger: Hashable, Sendable {
    /// One moment the frontier moved: the frontier then, and the join of the reports behind it.
    public struct Checkpoint: Hashable, Sendable {
        public let frontier: VersionVector
        public let join: VersionVector
        /// Wall-clock milliseconds when it was taken.
        public let at: UInt64
        /// When the oldest report behind it was made (wall-clock milliseconds).
        public let reportedAt: UInt64

        public init(frontier: VersionVector, join: VersionVector, at: UInt64, reportedAt: UInt64) {
            self.frontier = frontier
            self.join = join
            self.at = at
            self.reportedAt = reportedAt
        }
    }

    /// Everything below it has reached every active member, and so has every write concurrent
    /// with it: what collection may forget.
    public private(set) var stable: VersionVector
    /// When ``stable`` last moved (wall-clock milliseconds), 0 if never.
    public private(set) var stableAt: UInt64
    /// The latest ``Checkpoint/reportedAt`` of the checkpoints taken up: every active member
    /// had reported after it, and what they held then is held here.
    public private(set) var stableReportedAt: UInt64
    /// Checkpoints not yet stable, oldest first (at most ``maxCheckpoints``).
    public private(set) var checkpoints: [Checkpoint]

    /// Checkpoints kept while waiting: a frontier that moves faster than the cluster catches up
    /// replaces the newest, so the oldest (the next to become stable) are never lost.
    public static let maxCheckpoints = 16

    public init(
        stable: VersionVector = VersionVector(),
        stableAt: UInt64 = 0,
        stableReportedAt: UInt64 = 0,
        checkpoints: [Checkpoint] = []
    ) {
        self.stable = stable
        self.stableAt = stableAt
        self.stableReportedAt = stableReportedAt
        self.checkpoints = Array(checkpoints.prefix(Self.maxCheckpoints))
    }

    /// A member that no longer counts for the frontier (away, forgotten): its last report, and
    /// when it was last heard of (or forgotten, if later).
    public struct Departed: Hashable, Sendable {
        public let seen: VersionVector
        public let lastHeard: UInt64

        public init(seen: VersionVector, lastHeard: UInt64) {
            self.seen = seen
            self.lastHeard = lastHeard
        }
    }

    /// Takes in the active members' reports (this replica's own vector among them, as of `now`)
    /// and when the oldest of them was made (`reportedAt`): promotes the checkpoints the current
    /// frontier has overtaken, then records the frontier if it moved (or if the reports are
    /// newer). Returns true if ``stable`` or ``stableReportedAt`` moved.
    ///
    /// `release` (``CollectionSettings``' `holdsBackFor` and the members that no longer count; the
    /// stores do not pass it yet, Docs/MERGE.md says why): a checkpoint whose join holds writes that only such members reported (one
    /// reported them in a hello and was gone before its stream got through) would wait for them
    /// for ever, and every later checkpoint behind it. It stops waiting for them once every
    /// active member has reported more than `after` past the last time any departed member was
    /// heard of (and past the checkpoint): until then an active member may have met one of them
    /// after its last report and still bring what it took. What an active member reports is
    /// always waited for. Reviews found histories this does not cover (a member's report time
    /// refreshed by an open session, without the gossip a hello brings): the rule needs each
    /// active member's last hello. Nil: always wait for all of it.
    @discardableResult
    public mutating func observe(
        _ reports: [VersionVector],
        reportedAt: UInt64,
        now: UInt64,
        release: (after: UInt64, departed: [Departed])? = nil
    ) -> Bool {
        guard !reports.isEmpty else { return false }
        let frontier = Self.frontier(of: reports)
        let join = reports.reduce(VersionVector()) { $0.joined(with: $1) }
        func overtaken(_ checkpoint: Checkpoint) -> Bool {
            if frontier.covers(checkpoint.join) { return true }
            guard let release, frontier.covers(Self.frontier(of: [checkpoint.join, join])) else { return false }
            // Every departed member, not only those whose report shows the missing writes: one
            // whose last report lacks them may have taken them since, and passed them on.
            let heard = release.departed.map(\.lastHeard).max() ?? 0
            return reportedAt > max(checkpoint.at, heard) &+ release.after
        }
        var promoted: Checkpoint?
        while let first = checkpoints.first, overtaken(first) {
            promoted = first
            checkpoints.removeFirst()
        }
        var moved = false
        if let promoted, !stable.covers(promoted.frontier) || promoted.reportedAt > stableReportedAt {
            stable.join(promoted.frontier)
            stableReportedAt = max(stableReportedAt, promoted.reportedAt)
            stableAt = now
            moved = true
        }
        let last = checkpoints.last
        if !(last?.frontier ?? stable).covers(frontier) || reportedAt > (last?.reportedAt ?? stableReportedAt) {
            let checkpoint = Checkpoint(frontier: frontier, join: join, at: now, reportedAt: reportedAt)
            if checkpoints.count >= Self.maxCheckpoints { checkpoints.removeLast() }
            checkpoints.append(checkpoint)
        }
        return moved
    }

    /// The pointwise minimum of `reports`: for each writer, the least any report has seen of it
    /// (0 where a report lacks it).
    public static func frontier(of reports: [VersionVector]) -> VersionVector {
        guard var result = reports.first?.counters else { return VersionVector() }
        for report in reports.dropFirst() {
            for (writer, counter) in result { result[writer] = min(counter, report[writer]) }
        }
        return VersionVector(result)
    }

    /// Which of `reports` (by key) hold the frontier back most: those with the fewest writes
    /// that others have seen. Nil when all have seen the same.
    public static func laggard<Key: Comparable>(of reports: [Key: VersionVector]) -> Key? {
        let join = reports.values.reduce(VersionVector()) { $0.joined(with: $1) }
        func missing(_ vector: VersionVector) -> UInt64 {
            join.counters.reduce(0) { $0 &+ ($1.value - min($1.value, vector[$1.key])) }
        }
        let worst = reports.map { (key: $0.key, missing: missing($0.value)) }
            .filter { $0.missing > 0 }
            .max { ($0.missing, $1.key) < ($1.missing, $0.key) }
        return worst?.key
    }
}
