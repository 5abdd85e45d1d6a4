import LansyncCore
import LansyncTestSupport

/// The invariants every history must end with, as a list of human-readable violations (empty when
/// all hold), so a failure says exactly what broke.
enum Invariants {
    /// Convergence: after a complete exchange every replica holds the same state and shows the same.
    static func converged(_ history: History) -> [String] {
        var problems: [String] = []
        let first = history.replicas[0]
        for replica in history.replicas.dropFirst() {
            if replica.versionVector != first.versionVector {
                problems.append("version vectors differ: \(first.versionVector) vs \(replica.versionVector)")
            }
            if replica.items != first.items {
                let differing = Set(first.items.keys).union(replica.items.keys).filter {
                    first.items[$0] != replica.items[$0]
                }
                problems.append(
                    "replica \(replica.nodeID.short) differs from \(first.nodeID.short) on items \(differing.sorted())"
                )
            }
            if replica.views != first.views { problems.append("views differ on \(replica.nodeID.short)") }
            if replica.conflicts != first.conflicts {
                problems.append("conflict lists differ on \(replica.nodeID.short)")
            }
        }
        return problems
    }

    /// Rollbacks stay harmless: no dot named two writes, and no version vector ever claimed a write
    /// its replica did not hold (checked after every exchange).
    static func rollbacksHarmless(_ history: History) -> [String] {
        history.reissued + history.dishonest + history.refusedDeltas
    }

    /// Nothing acknowledged is lost (except writes a rollback took from the only replica that had
    /// them): every write is either still a live version of each field it
    /// touched, or was seen by the writer of a live version (superseded by a causally later write);
    /// every list element a write added is still listed, or a write that saw the add removed it.
    static func noWriteLost(_ history: History) -> [String] {
        var problems: [String] = []
        let replica = history.replicas[0]
        for write in history.writes.values {
            for (field, _) in write.contexts
            where !history.lostWithRollback.contains(.init(dot: write.dot, field: field))
                || replica.items[write.item]?.fields[field]?.context.contains(write.dot) == true
            {
                guard let state = replica.items[write.item]?.fields[field] else {
                    problems.append("write \(write.dot) to \(write.item).\(field) vanished: the field is gone")
                    continue
                }
                if !state.context.contains(write.dot) {
                    problems.append("write \(write.dot) to \(write.item).\(field) never arrived")
                }
                let live = state.versions.contains { $0.dot == write.dot }
                let superseded = state.versions.contains { version in
                    history.writes[version.dot]?.contexts[field]?.contains(write.dot) == true
                }
                if !live && !superseded {
                    problems.append("write \(write.dot) to \(write.item).\(field) was lost: no live version saw it")
                }
                for element in write.added[field] ?? [] where !state.entries.contains(where: { $0.value == element }) {
                    let removedBySomeone = history.writes.values.contains { later in
                        guard later.item == write.item, later.contexts[field]?.contains(write.dot) == true else {
                            return false
                        }
                        if later.removed[field]?.contains(element) == true { return true }
                        return later.dot != write.dot && later.replacedLists.contains(field)
                    }
                    if !removedBySomeone {
                        problems.append("element \(element) added by \(write.dot) to \(write.item).\(field) was lost")
                    }
                }
            }
        }
        return problems
    }
}
