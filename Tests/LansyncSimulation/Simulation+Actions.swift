import LansyncCore
import LansyncNode
import LansyncTestSupport
import LansyncWire

extension Simulation {
    /// Carries out a machine's actions against its node's replica, as the node's session driver
    /// does against SQLite: batches applied and acknowledged, deltas planned from the replica,
    /// every other session told when the replica changed.
    mutating func perform(_ actions: [SessionMachine.Action], session s: Int, side: Int) {
        var pending = actions[...]
        while let action = pending.popFirst() {
            guard let session = sessions[s], session.open[side] else { return }
            let (me, peer) = (session.nodes[side], session.nodes[1 - side])
            switch action {
            case .send(let message):
                send(.message(stamped(message, at: me)), session: s, to: 1 - side)
            case let .apply(sequence, batch), let .applyFinal(sequence, batch):
                let incarnation = session.machines[side].peer?.writer ?? ids[peer]
                record(batch, at: me, from: peer, session: s)
                let before = nodes[me].replica.changes
                guard nodes[me].replica.apply(batch, from: ids[peer], incarnation: incarnation, wallMilliseconds: wall)
                else {
                    faults.append("n\(me) refused a batch of deltas from n\(peer) at \(now)")
                    close(s, side: side)
                    return
                }
                let changed = Int(nodes[me].replica.changes - before)
                var told = changed > 0
                if case .applyFinal = action {
                    nodes[me].replica.completeStream(from: ids[peer])
                    told = true
                }
                // The vector as the store reads it in the batch's transaction (a final batch's
                // stream completed in it).
                let keep = nodes[me].record.applied(
                    covers: batch.covers,
                    hops: session.hops[side],
                    changed: changed,
                    held: nodes[me].replica.versionVector
                )
                if told {
                    let hops = HopRecord.arrived(session.hops[side])
                    queue.push(.changed(node: me, except: s, forwarded: true, hops: changed > 0 ? hops : nil), at: now)
                }
                pending += sessions[s]!.machines[side].handle(
                    .applied(sequence: sequence, now: instant, changed: changed, keep: keep)
                )
            case .completeStream:
                nodes[me].replica.completeStream(from: ids[peer])
                queue.push(.changed(node: me, except: s, forwarded: true, hops: nil), at: now)
            case let .startDelta(vv, _, deltaBase):
                sessions[s]!.deltas[side] = nodes[me].replica.delta(
                    for: vv,
                    maxUpdates: WireLimits.maxUpdatesPerBatch,
                    deltaBase: deltaBase
                )
            case .produceBatch:
                let next = session.deltas[side].first
                if next != nil { sessions[s]!.deltas[side].removeFirst() }
                let last = next != nil && sessions[s]!.deltas[side].isEmpty
                pending += sessions[s]!.machines[side].handle(.produced(next, now: instant, last: last))
            case .sendSummary:
                send(.message(.summary(versionVector: nodes[me].replica.versionVector)), session: s, to: 1 - side)
            case .readVersion:
                let version = nodes[me].replica.versionVector
                pending += sessions[s]!.machines[side].handle(
                    .localChanged(localVersion: version, now: instant)
                )
            case .wake(let after):
                queue.push(.wake(session: s, side: side), at: now + after)
            case .peerReady(let hello):
                nodes[me].replica.meet(hello.nodeID, incarnation: hello.writer)
                hearMembers(hello, at: me, from: peer)
                // The hello's addresses: members the peer passes on (a sample of its view).
                let passed = nodes[peer].view.sample(config.passedOn, for: ids[me], using: &rng)
                nodes[me].view.learn(passed + [ids[peer]], using: &rng)
            case .upToDate:
                if session.antiEntropy, side == 0 { close(s, side: side) }
            case .finished, .close:
                close(s, side: side)
            }
        }
    }

    /// A batch with the hops its changes took to reach `me` (``HopRecord``), as the node's
    /// session driver stamps it.
    func stamped(_ message: Message, at me: Int) -> Message {
        guard config.flood != 0, let covers = message.batchCovers else { return message }
        return nodes[me].record.hops(of: covers).map { .reached(hops: $0, message) } ?? message
    }

    /// A hello's count of members (protocol 1.11, ``MemberSketch``) joins this node's: how many
    /// it counts sets how far a change floods, as on the node (``ViewKeeper``).
    mutating func hearMembers(_ hello: Hello, at me: Int, from peer: Int) {
        if let sketch = hello.members { nodes[me].sketch.merge(sketch) }
        nodes[me].sketch.insert(ids[peer])
        let members = max(nodes[me].sketch.estimate, nodes[me].view.clusterSize)
        nodes[me].record.flood = config.flood ?? HopRecord.flood(forClusterOf: members)
    }

    /// Counts the tracked changes `batch` carries to `me`: a first delivery sets the hop it
    /// reached `me` at, a later one is a duplicate.
    private mutating func record(_ batch: DeltaBatch, at me: Int, from peer: Int, session s: Int) {
        var items: [ItemID] = []
        for update in batch.updates where tracked[update.key.item] != nil && !items.contains(update.key.item) {
            items.append(update.key.item)
        }
        for item in items {
            tracked[item]!.deliveries += 1
            if !tracked[item]!.carried.insert(Carried(session: s, to: me)).inserted { counters.resentInSession += 1 }
            guard nodes[me].hops[item] == nil else { continue }
            let hop = (nodes[peer].hops[item] ?? 0) + 1
            nodes[me].hops[item] = hop
            if let before = nodes[peer].hopsAfterHeal[item] {
                nodes[me].hopsAfterHeal[item] = before + 1
                tracked[item]!.deepestAfterHeal = max(tracked[item]!.deepestAfterHeal ?? 0, before + 1)
            }
            tracked[item]!.reached.append(now - tracked[item]!.at)
            tracked[item]!.deepest = max(tracked[item]!.deepest, hop)
        }
    }

    // MARK: What a scenario does

    /// A local edit on `n`: a new item (a tracked change), or with `shared`, a field of the item
    /// every node edits (concurrent edits, merged and kept in conflict where they clash).
    public mutating func edit(_ n: Int, shared: Bool = false) {
        guard nodes[n].up else { return }
        edits += 1
        let id = ItemID(unchecked: shared ? "shared" : "c\(edits)")
        let edit: ItemEdit =
            if shared, nodes[n].replica.items[id] != nil {
                .update([.set(.named("v\(edits % 3)"), .integer(Int64(edits)))])
            } else {
                .create(type: "t", assignments: [.set(.named("v"), .integer(Int64(edits)))])
            }
        do {
            try nodes[n].replica.apply(edit, to: id, wallMilliseconds: wall)
        } catch {
            faults.append("n\(n) refused its own edit of \(id): \(error)")
            return
        }
        if !shared {
            tracked[id] = Tracked(origin: n, at: now)
            nodes[n].hops[id] = 0
        }
        queue.push(.changed(node: n, except: nil, forwarded: false), at: now)
    }

    /// The node's process dies: its peers see their connections reset; the replica and the peers
    /// it knew are on disk.
    public mutating func crash(_ n: Int) {
        guard nodes[n].up else { return }
        for s in sessionIDs(of: n) { if let side = side(of: n, in: s) { close(s, side: side) } }
        nodes[n].up = false
        nodes[n].view.restarted()
        // Kept in memory only: a restarted node knows no hops.
        nodes[n].record = HopRecord(writer: nodes[n].replica.writer)
    }

    /// A crashed node starts again.
    public mutating func restart(_ n: Int) {
        guard !nodes[n].up, nodes[n].member else { return }
        bringUp(n)
    }

    /// The node leaves the cluster for good (its sessions end cleanly).
    public mutating func leave(_ n: Int) {
        crash(n)
        nodes[n].member = false
    }

    /// Splits the nodes into groups that cannot reach one another: sessions across stall (TCP
    /// holds what they send) and end at their idle timeout; dials across time out.
    public mutating func partition(_ group: (Int) -> Int) {
        groups = (0..<nodes.count).map(group)
    }

    /// Ends a partition: what TCP held is delivered, in order.
    public mutating func heal() {
        groups = nil
        for n in nodes.indices {
            for item in nodes[n].hops.keys where tracked[item] != nil {
                nodes[n].hopsAfterHeal[item] = 0
                tracked[item]!.deepestAfterHeal = tracked[item]!.deepestAfterHeal ?? 0
            }
        }
        for s in sessions.keys.sorted() {
            for side in 0..<2 {
                let held = sessions[s]!.held[side].sorted { $0.order < $1.order }
                sessions[s]!.held[side] = []
                for (order, delivery) in held { transmit(delivery, order: order, session: s, to: side) }
            }
        }
    }

    /// Counts from zero again (the figures of one phase of a scenario).
    public mutating func resetCounters() {
        counters = Counters()
        tracked = [:]
    }

    public var nodeCount: Int { nodes.count }
    public func isUp(_ n: Int) -> Bool { nodes[n].up }
    public func isMember(_ n: Int) -> Bool { nodes[n].member }
    /// The view sessions each member that is up holds.
    public var sessionsPerNode: [Int] { nodes.filter { $0.up && $0.member }.map(\.sessions.count) }
    /// A random member that is up, from index `from` on, drawn from the run's generator.
    public mutating func randomLiveNode(from: Int = 0) -> Int? {
        let live = nodes.indices.filter { $0 >= from && nodes[$0].up && nodes[$0].member }
        return live.randomElement(using: &rng)
    }
}
