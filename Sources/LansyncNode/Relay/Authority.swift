import LansyncCore
public import LansyncReplica
public import Logging

/// How the relay, the cluster's authority, settles a conflict.
public enum SettlePolicy: String, Sendable, CaseIterable {
    /// Keep the value every node already shows: the latest timestamp, then the highest node id.
    case latest
    /// Keep the value that reached the relay first.
    case firstSeen = "first-seen"
}

/// The relay's authority: whenever its replica holds siblings in a field, it writes a resolution
/// (its own dot, superseding every sibling it has seen) with the value its policy picks. The
/// resolution travels like any edit, so the conflict closes on every node, and the losing values
/// stay in `history`.
///
/// With a ``SettlingGate`` (several relays, one authority) it settles only while the gate says
/// this relay holds the right to, and writes the value the gate records for the conflict: the
/// first relay's decision, whichever relay settles it. Calls never overlap: one that comes while
/// a round runs makes that round look once more when it ends.
public actor Authority {
    let store: any ReplicaStorage
    let io: BlockingIO
    let policy: SettlePolicy
    public let gate: SettlingGate?
    public private(set) var settled = 0
    let logger: Logger
    /// Where the rounds stand: none running, or one running, asked to look once more or not.
    private enum Rounds: Equatable {
        case idle
        case running(again: Bool)
    }
    private var rounds = Rounds.idle

    public init(
        store: any ReplicaStorage,
        io: BlockingIO,
        policy: SettlePolicy,
        gate: SettlingGate? = nil,
        logger: Logger = .silent
    ) {
        self.store = store
        self.io = io
        self.policy = policy
        self.gate = gate
        self.logger = logger
    }

    /// Settles every open conflict; returns how many it settled. It looks again for as long as
    /// calls keep coming while it runs: for a task of its own, never a session's.
    @discardableResult
    public func settleAll() async -> Int {
        guard rounds == .idle else {
            rounds = .running(again: true)
            return 0
        }
        var count = 0
        repeat {
            rounds = .running(again: false)
            count += await round()
        } while rounds == .running(again: true)
        rounds = .idle
        settled += count
        return count
    }

    /// One round, for a caller that must not wait on others' changes (a session that applied a
    /// batch): settles what is open now, or, while a round runs, makes it look once more. `more`
    /// says calls came during this round; the caller hands them to ``settleAll()`` in a task of
    /// its own. (A session that started a round used to run every round after it while other
    /// sessions' batches kept coming: under load its peer got nothing for seconds, W10.)
    public func settleOnce() async -> (settled: Int, more: Bool) {
        guard rounds == .idle else {
            rounds = .running(again: true)
            return (0, false)
        }
        rounds = .running(again: false)
        let count = await round()
        let more = rounds == .running(again: true)
        rounds = .idle
        settled += count
        return (count, more)
    }

    private func round() async -> Int {
        do {
            if let gate { return try await settle(through: gate) }
            return try await settleAlone()
        } catch {
            // Left open, the conflicts stay visible and are tried again after the next change.
            logger.error("the relay could not settle conflicts: \(error)")
            return 0
        }
    }

    /// Every open conflict, with the value this relay's policy picks, in one transaction.
    private func settleAlone() async throws -> Int {
        let store = self.store
        let policy = self.policy
        return try await io.write { () throws -> Int in
            var count = 0
            for conflict in try store.conflicts() {
                guard let state = try store.itemState(conflict.item)?.fields[conflict.field], state.hasConflict
                else { continue }
                let value = try Self.choose(policy, state: state, conflict: conflict, store: store)
                if try Self.resolve(conflict, with: value, store: store) { count += 1 }
            }
            return count
        }
    }

    /// Every open conflict, with the value the gate records for it (the first relay's decision),
    /// while this relay holds the gate; nothing otherwise.
    private func settle(through gate: SettlingGate) async throws -> Int {
        guard await gate.holds() else { return 0 }
        let store = self.store
        let policy = self.policy
        let proposals = try await io.run { () throws -> [(FieldConflict, Value?)] in
            try store.conflicts().compactMap { conflict in
                guard let state = try store.itemState(conflict.item)?.fields[conflict.field], state.hasConflict
                else { return nil }
                return (conflict, try Self.choose(policy, state: state, conflict: conflict, store: store))
            }
        }
        var decisions: [(FieldConflict, Value?)] = []
        for (conflict, proposed) in proposals {
            do {
                decisions.append((conflict, try await gate.decide(conflict, proposed)))
            } catch {
                logger.warning("the relay settles nothing now: \(error)")
                break
            }
        }
        guard !decisions.isEmpty else { return 0 }
        return try await io.write { [decisions] () throws -> Int in
            var count = 0
            for (conflict, value) in decisions {
                // Only the conflict that was decided: a field whose versions moved since is
                // another conflict, for the next round.
                guard let state = try store.itemState(conflict.item)?.fields[conflict.field], state.hasConflict,
                    Set(state.versions.map(\.dot)) == Set(conflict.versions.map(\.dot))
                else { continue }
                if try Self.resolve(conflict, with: value, store: store) { count += 1 }
            }
            return count
        }
    }

    /// Writes the resolution; false if the conflict was settled meanwhile (by a concurrent batch
    /// or a user).
    private static func resolve(_ conflict: FieldConflict, with value: Value?, store: any ReplicaStorage) throws -> Bool
    {
        do {
            try store.apply(
                .resolve(conflict.field, value),
                to: conflict.item,
                wallMilliseconds: WallClock.milliseconds
            )
            return true
        } catch StoreError.edit(.noConflict, _) {
            return false
        }
    }

    /// The value the conflict is settled with; nil when the version chosen removed the field
    /// (the settlement removes it too; an item's type is settled with the latest type instead).
    static func choose(
        _ policy: SettlePolicy,
        state: FieldState,
        conflict: FieldConflict,
        store: any ReplicaStorage
    ) throws -> Value? {
        let chosen: Value?
        switch policy {
        case .latest:
            chosen = conflict.shown
        case .firstSeen:
            if let first = try store.firstSeen(state.versions.map(\.dot), item: conflict.item, field: conflict.field),
                let version = state.versions.first(where: { $0.dot == first })
            {
                chosen = state.value(of: version)
            } else {
                chosen = conflict.shown
            }
        }
        return chosen ?? (conflict.field == .type ? conflict.values.first : nil)
    }
}
