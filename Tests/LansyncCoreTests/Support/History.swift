import LansyncCore
import LansyncTestSupport

/// A random history of 2–7 replicas: local edits (create, set, list add/remove, delete, restore,
/// resolve) and pairwise delta exchanges that may be interrupted (only a prefix of the batches
/// arrives), duplicated, or replayed late, then a complete exchange.
///
/// Replicas are also snapshotted and rolled back to their snapshot, as a restored backup or VM
/// snapshot does: either with the writer markers kept (a data directory restored) or lost (the
/// machine rebooted). Writes follow the store's writer rule (``WriterContinuity``): a replica
/// edits under its current writer only while the marker proves continuity and no peer has
/// witnessed a rollback, and takes a fresh writer otherwise.
///
/// Every edit a replica acknowledged is recorded with the context its writer had, so the checks
/// can tell a legitimately superseded write from a lost one.
struct History {
    struct Write {
        let dot: Dot
        let item: ItemID
        /// Each field the write touched, with that field's context right after the write.
        let contexts: [FieldName: VersionVector]
        let added: [FieldName: [Value]]
        let removed: [FieldName: [Value]]
        let replacedLists: Set<FieldName>
    }

    let seed: UInt64
    var rng: SplitMix64
    var replicas: [Replica]
    /// Each replica's wall clock; some run an hour behind, and clocks sometimes jump backwards.
    var walls: [UInt64]
    var writes: [Dot: Write] = [:]
    /// Old session prefixes, replayed later as duplicates and reorderings.
    var inFlight: [(from: NodeID, incarnation: NodeID, to: Int, batches: [DeltaBatch])] = []
    var log: [String] = []
    /// The last snapshot of each replica, as a backup would hold it.
    var snapshots: [Int: Replica] = [:]
    /// The writer markers kept outside the replicas' files: the highest counter each writer issued.
    var markers: [NodeID: UInt64] = [:]
    /// Writes that existed only on a replica when it was rolled back: the user's restore lost them.
    var lostWithRollback: Set<FieldWrite> = []
    struct FieldWrite: Hashable {
        let dot: Dot
        let field: FieldName
    }
    /// A dot issued twice (it must never happen).
    var reissued: [String] = []
    /// Vector claims of writes a replica did not hold, found after any step.
    var dishonest: [String] = []
    /// Batches of field deltas a receiver refused: the base of a fresh exchange is the receiver's
    /// own vector, so none may be (replays of old batches may, harmlessly).
    var refusedDeltas: [String] = []
    private var writersIssued: UInt64 = 0

    static let fields = ["a", "b", "title", "tags"].map(FieldName.named)

    init(seed: UInt64, replicaCount: Int) {
        self.seed = seed
        rng = SplitMix64(seed: seed)
        replicas = (1...replicaCount).map { Replica(nodeID: .node(UInt64($0))) }
        walls = (0..<replicaCount).map { _ in 1_700_000_000_000 }
        for i in walls.indices where rng.chance(30) { walls[i] -= 3_600_000 }
        for replica in replicas { markers[replica.writer] = 0 }  // `init` records the fresh replica
    }

    mutating func run(steps: Int) {
        for _ in 0..<steps { step() }
        completeExchange()
    }

    mutating func step() {
        for i in walls.indices { walls[i] += rng.chance(5) ? 0 : UInt64.random(in: 0...50, using: &rng) }
        if rng.chance(3) {
            let i = Int.random(in: 0..<walls.count, using: &rng)
            walls[i] -= 10_000
        }
        let roll = Int.random(in: 0..<100, using: &rng)
        if roll < 55 {
            localEdit(Int.random(in: 0..<replicas.count, using: &rng))
        } else if roll < 60 {
            let r = Int.random(in: 0..<replicas.count, using: &rng)
            snapshots[r] = replicas[r]
            log.append("snapshot r\(r) at \(replicas[r].versionVector)")
        } else if roll < 63 {
            rollBack(Int.random(in: 0..<replicas.count, using: &rng), reboot: rng.chance(40))
        } else if roll < 90 {
            let a = Int.random(in: 0..<replicas.count, using: &rng)
            var b = Int.random(in: 0..<replicas.count - 1, using: &rng)
            if b >= a { b += 1 }
            exchange(from: a, to: b, interruptible: true)
        } else if !inFlight.isEmpty {
            let k = Int.random(in: 0..<inFlight.count, using: &rng)
            let replay = inFlight[k]
            log.append("replay \(replay.batches.count) old batches to r\(replay.to)")
            for batch in replay.batches {
                replicas[replay.to].apply(
                    batch,
                    from: replay.from,
                    incarnation: replay.incarnation,
                    wallMilliseconds: walls[replay.to]
                )
            }
            let writer = replicas[replay.to].writer
            markers[writer] = max(markers[writer] ?? 0, replicas[replay.to].changes)
            if rng.chance(50) { inFlight.remove(at: k) }
        }
    }

    /// Puts replica `r` back to its last snapshot (or to its empty start). Writes only it held are
    /// lost to the cluster, as with a real restore; everything else must come back.
    mutating func rollBack(_ r: Int, reboot: Bool) {
        let current = replicas[r]
        let restored = snapshots[r] ?? Replica(nodeID: current.nodeID)
        // What only this replica held (in a field's state, not just claimed) is gone with it.
        func holds(_ replica: Replica, _ write: Write, _ field: FieldName) -> Bool {
            replica.items[write.item]?.fields[field]?.context.contains(write.dot) == true
        }
        for write in writes.values {
            for field in write.contexts.keys where holds(current, write, field) && !holds(restored, write, field) {
                let elsewhere = replicas.indices.contains { $0 != r && holds(replicas[$0], write, field) }
                if !elsewhere { lostWithRollback.insert(FieldWrite(dot: write.dot, field: field)) }
            }
        }
        replicas[r] = restored
        // A batch's covers hold only against the version vector its stream was planned for; a
        // restored replica's sessions all start anew (its process restarted), so no batch of an
        // earlier stream reaches it. Batches it sent earlier carry real writes and may still arrive.
        inFlight.removeAll { $0.to == r }
        if reboot {
            for writer in Set(writes.keys.map(\.node)).union([current.writer, restored.writer])
            where isWriter(writer, of: r) {
                markers[writer] = nil
            }
        }
        log.append("roll back r\(r) to \(restored.versionVector)\(reboot ? " after a reboot" : "")")
        // The restarted node checks its writer's continuity at once, as `lansync node` does.
        renewWriterIfNeeded(r)
    }

    func isWriter(_ writer: NodeID, of r: Int) -> Bool {
        writer == replicas[r].nodeID || writer.high == 0xF000 + UInt64(r)
    }

    /// The store's rule before a local edit: keep the writer only while its continuity is proven.
    mutating func renewWriterIfNeeded(_ r: Int) {
        let writer = replicas[r].writer
        let held = replicas[r].changes
        guard replicas[r].writerRetired || !WriterContinuity.isProven(marker: markers[writer], held: held) else {
            return
        }
        writersIssued += 1
        let fresh = NodeID(high: 0xF000 + UInt64(r), low: writersIssued)
        replicas[r].startWriter(fresh)
        markers[fresh] = replicas[r].changes
        log.append("r\(r) writes as \(fresh.short)-\(writersIssued) from now on")
    }

    /// No replica's version vector may claim a write it does not hold.
    mutating func checkHonesty(after step: String) {
        for replica in replicas {
            for write in writes.values where replica.versionVector.contains(write.dot) {
                for field in write.contexts.keys {
                    let context = replica.items[write.item]?.fields[field]?.context ?? VersionVector()
                    if !context.contains(write.dot) {
                        dishonest.append(
                            "after \(step): r\(replicas.firstIndex { $0.nodeID == replica.nodeID }!) claims \(write.dot) but its \(write.item).\(field) has not seen it"
                        )
                    }
                }
            }
        }
    }

    mutating func localEdit(_ r: Int) {
        renewWriterIfNeeded(r)
        let existing = replicas[r].items.keys.sorted()
        let id: ItemID =
            (existing.isEmpty || rng.chance(20))
            ? ItemID.named("i\(Int.random(in: 0..<6, using: &rng))")
            : rng.pick(existing)
        let item = replicas[r].items[id]
        let edit: ItemEdit
        if item == nil || item?.exists == false {
            edit = .create(type: rng.pick(["task", "note"]), assignments: randomAssignments())
        } else {
            let roll = Int.random(in: 0..<100, using: &rng)
            if roll < 8 {
                edit = .delete
            } else if roll < 16 {
                edit = .restore
            } else if roll < 26, let conflict = item!.conflicts.first {
                // Kept values, a new one, or (as `unset` would) the field removed.
                let value: Value? =
                    rng.chance(15) && conflict.field != .type
                    ? nil
                    : rng.chance(50) && !conflict.values.isEmpty
                        ? rng.pick(conflict.values) : EdgeValues.random(using: &rng)
                edit = .resolve(conflict.field, value)
            } else {
                edit = .update(randomAssignments())
            }
        }
        let dot = replicas[r].nextDot
        do {
            try replicas[r].apply(edit, to: id, wallMilliseconds: walls[r])
            markers[dot.node] = max(markers[dot.node] ?? 0, replicas[r].changes)
            if writes[dot] != nil { reissued.append("r\(r) issued \(dot) a second time") }
            record(edit, dot: dot, item: id, on: r)
            log.append("r\(r) \(dot) \(id) \(edit)".prefix(200).description)
        } catch {
            // Refused edits (delete of a deleted item, += on a scalar...) must change nothing.
            precondition(replicas[r].nextDot == dot)
        }
    }

    mutating func randomAssignments() -> [Assignment] {
        (0..<Int.random(in: 1...3, using: &rng)).map { _ in
            let field = rng.pick(Self.fields)
            let roll = Int.random(in: 0..<100, using: &rng)
            if field.rawValue == "tags", roll < 4 {
                // A long list replaced whole: enough removed tags to cut the removal log.
                return .set(field, .list((0..<Int.random(in: 20...90, using: &rng)).map { .integer(Int64($0)) }))
            }
            if field.rawValue == "tags", roll < 10 {
                return rng.chance(50)
                    ? .remove(field, .integer(Int64.random(in: 0..<90, using: &rng)))
                    : .add(field, .integer(Int64.random(in: 0..<90, using: &rng)))
            }
            if roll >= 94 {
                // A removal (refused, with the whole edit, when the field is not shown).
                return .unset(field)
            }
            if field.rawValue == "tags" || roll < 20 {
                let element = rng.pick(EdgeValues.elements)
                return roll % 3 == 0 ? .remove(field, element) : .add(field, element)
            }
            return .set(field, EdgeValues.random(using: &rng))
        }
    }

    mutating func record(_ edit: ItemEdit, dot: Dot, item: ItemID, on r: Int) {
        guard let state = replicas[r].items[item] else { return }
        var contexts: [FieldName: VersionVector] = [:]
        var added: [FieldName: [Value]] = [:]
        var removed: [FieldName: [Value]] = [:]
        var replaced = Set<FieldName>()
        for (name, field) in state.fields where field.versions.contains(where: { $0.dot == dot }) {
            contexts[name] = field.context
            if case .list(let change)? = field.versions.first(where: { $0.dot == dot })?.write {
                added[name] = change.added
                removed[name] = change.removed
                if change.replaced { replaced.insert(name) }
            } else {
                replaced.insert(name)
            }
        }
        writes[dot] = Write(
            dot: dot,
            item: item,
            contexts: contexts,
            added: added,
            removed: removed,
            replacedLists: replaced
        )
    }

    /// Sends `from`'s delta for `to`'s version vector in small batches; the session may break
    /// after any batch, and what was sent may arrive again later.
    mutating func exchange(from a: Int, to b: Int, interruptible: Bool) {
        // The hellos: each side learns what the other holds of its own writer.
        replicas[a].observe(peer: replicas[b].versionVector)
        replicas[b].observe(peer: replicas[a].versionVector)
        // The session as the node runs it: the receiver drops progress from another incarnation of
        // the sender, tells it what it holds and how far its last stream got, and counts the
        // stream in its vector once it is complete.
        let sender = replicas[a].nodeID
        let incarnation = replicas[a].writer
        replicas[b].meet(sender, incarnation: incarnation)
        let resume = replicas[b].resume(from: sender)
        let start = StreamResume.start(
            receiver: replicas[b].versionVector,
            resume: resume?.covers ?? VersionVector(),
            resumeFor: resume?.incarnation,
            senderWriter: incarnation
        )
        // Most sessions speak protocol 1.2: list fields travel as deltas against what the
        // receiver's hello announced (never its resume point, which is partial).
        let deltaBase = rng.chance(75) ? replicas[b].versionVector : nil
        let batches = replicas[a].delta(
            for: start,
            maxUpdates: Int.random(in: 1...8, using: &rng),
            deltaBase: deltaBase
        )
        var delivered = batches.count
        if interruptible, rng.chance(30) { delivered = Int.random(in: 0...batches.count, using: &rng) }
        log.append("sync r\(a)->r\(b) \(delivered)/\(batches.count) batches")
        for batch in batches.prefix(delivered) {
            if !replicas[b].apply(batch, from: sender, incarnation: incarnation, wallMilliseconds: walls[b]) {
                refusedDeltas.append("sync r\(a)->r\(b): a batch of deltas against \(batch.base!) was refused")
            }
        }
        // The receiver's marker follows what it received, as the store's does.
        markers[replicas[b].writer] = max(markers[replicas[b].writer] ?? 0, replicas[b].changes)
        if delivered == batches.count { replicas[b].completeStream(from: sender) }
        checkHonesty(after: "sync r\(a)->r\(b)")
        if interruptible, rng.chance(20), delivered > 0 {
            inFlight.append((sender, incarnation, b, Array(batches.prefix(delivered))))
        }
    }

    /// Every pair exchanges everything until a whole round changes nothing.
    mutating func completeExchange() {
        for round in 0..<20 {
            let before = replicas.map(\.versionVector)
            let beforeItems = replicas.map(\.items)
            for a in replicas.indices {
                for b in replicas.indices where a != b { exchange(from: a, to: b, interruptible: false) }
            }
            if round > 0, before == replicas.map(\.versionVector), beforeItems == replicas.map(\.items) { return }
        }
    }

    /// Describes the history for a failure message.
    var replayHint: String {
        let full = getenvString("LANSYNC_REPLAY") != nil
        let steps = full ? log : Array(log.filter { !$0.hasPrefix("sync") }.suffix(25))
        return
            "history seed \(seed), \(replicas.count) replicas; \(full ? "every step" : "last edits (LANSYNC_REPLAY shows every step)"):\n"
            + steps.joined(separator: "\n")
    }
}
