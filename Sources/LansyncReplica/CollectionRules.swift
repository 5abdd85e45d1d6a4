public import LansyncCore

// The rules of causal stability and collection that do not depend on how a store keeps its rows
// (Docs/MERGE.md, "Causal stability and collection"), written once for every store: how a
// member's report is recorded, who is active, away or holding the frontier back, and when a
// replica is away or stale itself.

extension MemberReport {
    /// What a replica keeps for this report's node once the report is recorded over `held` (what
    /// it kept before, nil if nothing): vectors joined, the later time kept, a forgetting undone
    /// only by a newer report of the member's own session. Nil when nothing changes, or when the
    /// report is gossip (`known`: the node ids the replica already knows) about a node it does not
    /// know; gossip keeps only the writers the replica knows.
    public func recorded(over held: MemberReport?, gossiped: Bool, known: Set<String>?) -> MemberReport? {
        var seen = self.seen
        if let known {
            guard known.contains(nodeID.text) else { return nil }
            seen.join(VersionVector(folds.counters.filter { known.contains($0.key.text) }))
            seen = VersionVector(seen.counters.filter { known.contains($0.key.text) })
        } else {
            seen.join(folds)
        }
        var at = self.at
        var forgotten: UInt64?
        if let held {
            forgotten = held.forgottenAt
            if let since = held.forgottenAt, !gossiped, at > since { forgotten = nil }
            guard held.seen != held.seen.joined(with: seen) || at > held.at || forgotten != held.forgottenAt
            else { return nil }
            seen.join(held.seen)
            at = max(at, held.at)
        }
        return MemberReport(nodeID: nodeID, seen: seen, at: at, forgottenAt: forgotten)
    }

    /// The members that hold the frontier: not forgotten, and heard of within `awayAfter` of
    /// `now` (the callers that judge the frontier pass ``CollectionSettings/holdsBackFor``: a
    /// member away but within the clock margin still holds it). A replica that is away itself
    /// (`selfAway`) judges no one away: its silence is its own, and collecting without the others
    /// would take its stale view for the cluster's.
    public static func active(
        _ reports: [MemberReport],
        now: UInt64,
        awayAfter: UInt64,
        selfAway: Bool = false
    ) -> [MemberReport] {
        reports.filter { $0.forgottenAt == nil && (selfAway || $0.at &+ awayAfter >= now) }
    }

    /// The members of `reports` not in `active`, as the ledger weighs them
    /// (``LansyncCore/StabilityLedger/Departed``): last heard of when last reported, or when
    /// forgotten if later.
    public static func departed(_ reports: [MemberReport], active: [MemberReport]) -> [StabilityLedger.Departed] {
        let counted = Set(active.map(\.nodeID))
        return reports.filter { !counted.contains($0.nodeID) }.map {
            StabilityLedger.Departed(seen: $0.seen, lastHeard: max($0.at, $0.forgottenAt ?? 0))
        }
    }

    /// The active member that holds the frontier back (nil if none), and the departed ones
    /// (forgotten, or silent past ``CollectionSettings/holdsBackFor``), for a replica `own` whose
    /// vector is `vector`.
    public static func laggard(
        _ reports: [MemberReport],
        now: UInt64,
        settings: CollectionSettings,
        selfAway: Bool,
        own: NodeID,
        vector: VersionVector
    ) -> (heldBackBy: NodeID?, departed: [NodeID]) {
        let active = Self.active(reports, now: now, awayAfter: settings.holdsBackFor, selfAway: selfAway)
        let departed = reports.filter { r in !active.contains { $0.nodeID == r.nodeID } }.map(\.nodeID)
        var vectors = Dictionary(active.map { ($0.nodeID, $0.seen) }) { a, _ in a }
        vectors[own] = vector
        return (StabilityLedger.laggard(of: vectors), departed)
    }

    /// When the member was last heard of (or forgotten, if later), if it is away (silent past
    /// the away window) or forgotten: a member a replica may have collected without.
    public func awaySince(now: UInt64, settings: CollectionSettings) -> UInt64? {
        guard forgottenAt != nil || at &+ settings.awayAfter < now else { return nil }
        return max(at, forgottenAt ?? 0)
    }
}

extension CollectionSettings {
    /// Deletes older than this may be collected, below the ledger's stable frontier: a delete
    /// every member could still restore when it last reported is not.
    public func collectCutoff(_ ledger: StabilityLedger, now: UInt64) -> UInt64 {
        let reported = min(now, ledger.stableReportedAt)
        return reported &- min(reported, collectAfter)
    }

    /// Since when a replica is away itself: `heard`, when it last heard of the relay (or, in a
    /// cluster without one, was last up to date with a peer), or its last rejoin if later, is
    /// past the away window. Nil if not, or if it never met anyone.
    public func awaySince(heard: UInt64, rejoinedAt: UInt64, now: UInt64) -> UInt64? {
        let last = max(heard, rejoinedAt)
        guard last > 0, last &+ awayAfter < now else { return nil }
        return last
    }

    /// Since when a replica's own state is older than the away window: last up to date with a
    /// peer (`synced`) or rejoined longer ago than the window, and a writer started since
    /// (`restarted`, the latest start for a reason other than a rejoin). Nil otherwise.
    public func staleSince(synced: UInt64, rejoinedAt: UInt64, restarted: UInt64?, now: UInt64) -> UInt64? {
        let last = max(synced, rejoinedAt)
        guard last > 0, last &+ awayAfter < now, let restarted, restarted > last else { return nil }
        return last
    }
}
