import LansyncCore
public import LansyncStore
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
public actor Authority {
    let store: ReplicaStore
    let io: BlockingIO
    let policy: SettlePolicy
    public private(set) var settled = 0
    let logger: Logger

    public init(
        store: ReplicaStore,
        io: BlockingIO,
        policy: SettlePolicy,
        logger: Logger = .silent
    ) {
        self.store = store
        self.io = io
        self.policy = policy
        self.logger = logger
    }

    /// Settles every open conflict; returns how many it settled.
    @discardableResult
    public func settleAll() async -> Int {
        let store = self.store
        let policy = self.policy
        let count: Int
        do {
            count = try await io.run { () throws -> Int in
                var count = 0
                for conflict in try store.conflicts() {
                    guard let state = try store.itemState(conflict.item)?.fields[conflict.field], state.hasConflict
                    else { continue }
                    let value = try Self.choose(policy, state: state, conflict: conflict, store: store)
                    do {
                        try store.apply(
                            .resolve(conflict.field, value),
                            to: conflict.item,
                            wallMilliseconds: WallClock.milliseconds
                        )
                        count += 1
                    } catch StoreError.edit(.noConflict, _) {
                        // Settled meanwhile (by a concurrent batch or a user): nothing to do.
                    }
                }
                return count
            }
        } catch {
            // Left open, the conflicts stay visible and are tried again after the next change.
            logger.error("the relay could not settle conflicts: \(error)")
            return 0
        }
        settled += count
        return count
    }

    /// The value the conflict is settled with; nil when the version chosen removed the field
    /// (the settlement removes it too; an item's type is settled with the latest type instead).
    static func choose(
        _ policy: SettlePolicy,
        state: FieldState,
        conflict: FieldConflict,
        store: ReplicaStore
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
