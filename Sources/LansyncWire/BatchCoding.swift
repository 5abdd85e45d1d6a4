import LansyncCore

/// The compact encoding of a batch (protocol 1): what makes a sync cost little more than the data.
///
/// - A node table lists each node id once (16 bytes); everything else refers to it by index.
/// - A version's or list tag's dot counter is written as its distance below the field's context
///   entry for that node (usually 0: one byte), and its timestamp as its signed distance from the
///   counter (local writes take their counter from the clock, so usually 0).
/// - Consecutive updates of one item share its id.
///
/// Decoding checks every index, distance and count against the input, then rebuilds each field
/// state through `FieldState`'s validating initialiser.
enum BatchCoding {
    struct NodeTable {
        var ids: [NodeID] = []
        var index: [NodeID: Int] = [:]

        mutating func ref(_ id: NodeID) -> Int {
            if let i = index[id] { return i }
            index[id] = ids.count
            ids.append(id)
            return ids.count - 1
        }
    }

    static func encode(sequence: UInt64, _ batch: DeltaBatch, into w: inout ByteWriter) {
        var table = NodeTable()
        for node in batch.covers.nodes { _ = table.ref(node) }
        for update in batch.updates {
            for node in update.state.context.nodes { _ = table.ref(node) }
            for case .overrule(_, let rejected, _) in update.state.versions.map(\.write) { for d in rejected { _ = table.ref(d.node) } }
        }

        w.varint(sequence)
        w.varint(UInt64(table.ids.count))
        for id in table.ids { w.nodeID(id) }
        writeVV(batch.covers, &w, &table)
        // Runs of updates of the same item.
        var runs: [(ItemID, [FieldUpdate])] = []
        for update in batch.updates {
            if let last = runs.last, last.0 == update.key.item { runs[runs.count - 1].1.append(update) } else { runs.append((update.key.item, [update])) }
        }
        w.varint(UInt64(runs.count))
        for (item, updates) in runs {
            w.string(item.rawValue)
            w.varint(UInt64(updates.count))
            for update in updates {
                w.string(update.key.field.rawValue)
                writeState(update.state, &w, &table)
            }
        }
    }

    static func writeVV(_ vv: VersionVector, _ w: inout ByteWriter, _ table: inout NodeTable) {
        w.varint(UInt64(vv.counters.count))
        for node in vv.nodes {
            w.varint(UInt64(table.ref(node)))
            w.varint(vv[node])
        }
    }

    static func writeDot(_ dot: Dot, context: VersionVector, _ w: inout ByteWriter, _ table: inout NodeTable) {
        w.varint(UInt64(table.ref(dot.node)))
        w.varint(context[dot.node] - dot.counter)
    }

    static func writeTime(_ time: HLCTimestamp, relativeTo counter: UInt64, _ w: inout ByteWriter) {
        w.signedVarint(Int64(bitPattern: time.rawValue &- counter))
    }

    static func writeState(_ s: FieldState, _ w: inout ByteWriter, _ table: inout NodeTable) {
        writeVV(s.context, &w, &table)
        w.varint(UInt64(s.versions.count))
        for v in s.versions {
            writeDot(v.dot, context: s.context, &w, &table)
            writeTime(v.timestamp, relativeTo: v.dot.counter, &w)
            switch v.write {
            case .assign(let value):
                w.byte(0)
                w.value(value)
            case .list(let change):
                w.byte(change.replaced ? 2 : 1)
                w.varint(UInt64(change.added.count))
                for e in change.added { w.value(e) }
                w.varint(UInt64(change.removed.count))
                for e in change.removed { w.value(e) }
            case let .overrule(kept, rejected, reason):
                w.byte(3)
                w.value(kept)
                w.varint(UInt64(rejected.count))
                for d in rejected {
                    w.varint(UInt64(table.ref(d.node)))
                    w.varint(d.counter)
                }
                w.string(reason)
            }
        }
        w.varint(UInt64(s.entries.count))
        for e in s.entries {
            w.value(e.value)
            writeDot(e.dot, context: s.context, &w, &table)
            writeTime(e.addedAt, relativeTo: e.dot.counter, &w)
            w.varint(UInt64(e.position))
        }
    }

    // MARK: Decoding

    static func decode(_ r: inout ByteReader) throws(WireError) -> (UInt64, DeltaBatch) {
        do {
            let sequence = try r.varint()
            let nodeCount = try r.count(minimumSize: 16)
            var nodes: [NodeID] = []
            for _ in 0..<nodeCount { nodes.append(try r.nodeID()) }
            guard Set(nodes).count == nodes.count else { throw WireError.malformed("node listed twice in a batch's table") }
            let covers = try readVV(&r, nodes)
            var updates: [FieldUpdate] = []
            for _ in 0..<(try r.count(minimumSize: 2)) {
                let item: ItemID
                do { item = try ItemID(try r.string()) } catch { throw WireError.malformed("invalid item id") }
                for _ in 0..<(try r.count(minimumSize: 4)) {
                    let field = try MessageCoder.fieldName(try r.string())
                    updates.append(FieldUpdate(key: FieldKey(item: item, field: field), state: try readState(&r, nodes)))
                    guard updates.count <= WireLimits.maxUpdatesPerBatch else {
                        throw WireError.malformed("batch of more than \(WireLimits.maxUpdatesPerBatch) updates")
                    }
                }
            }
            return (sequence, DeltaBatch(updates: updates, covers: covers))
        } catch {
            throw WireError(decoding: error)
        }
    }

    static func node(_ r: inout ByteReader, _ nodes: [NodeID]) throws -> NodeID {
        let i = try r.varint()
        guard i < UInt64(nodes.count) else { throw WireError.malformed("node index \(i) outside the batch's table") }
        return nodes[Int(i)]
    }

    static func readVV(_ r: inout ByteReader, _ nodes: [NodeID]) throws -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<(try r.count(minimumSize: 2)) {
            let id = try node(&r, nodes)
            let counter = try r.varint()
            guard counter <= Limits.maxCounter else { throw WireError.malformed("counter out of range") }
            guard counters.updateValue(counter, forKey: id) == nil else { throw WireError.malformed("node listed twice in a version vector") }
        }
        return VersionVector(counters)
    }

    static func readDot(_ r: inout ByteReader, _ nodes: [NodeID], context: VersionVector) throws -> Dot {
        let id = try node(&r, nodes)
        let below = try r.varint()
        guard below < context[id] else { throw WireError.malformed("dot outside its field's context") }
        return Dot(node: id, counter: context[id] - below)
    }

    static func readTime(_ r: inout ByteReader, relativeTo counter: UInt64) throws -> HLCTimestamp {
        HLCTimestamp(rawValue: counter &+ UInt64(bitPattern: try r.signedVarint()))
    }

    static func readState(_ r: inout ByteReader, _ nodes: [NodeID]) throws -> FieldState {
        let context = try readVV(&r, nodes)
        var versions: [FieldVersion] = []
        for _ in 0..<(try r.count(minimumSize: 4)) {
            let dot = try readDot(&r, nodes, context: context)
            let time = try readTime(&r, relativeTo: dot.counter)
            let write: FieldVersion.Write
            switch try r.byte() {
            case 0: write = .assign(try r.value())
            case 3:
                let kept = try r.value()
                var rejected: [Dot] = []
                for _ in 0..<(try r.count(minimumSize: 2)) {
                    let id = try node(&r, nodes)
                    let counter = try r.varint()
                    guard counter > 0, counter <= Limits.maxCounter, context.contains(Dot(node: id, counter: counter)) else {
                        throw WireError.malformed("overruled dot outside its field's context")
                    }
                    rejected.append(Dot(node: id, counter: counter))
                }
                write = .overrule(kept: kept, rejected: rejected, reason: String((try r.string()).prefix(256)))
            case let tag where tag == 1 || tag == 2:
                var added: [Value] = []
                for _ in 0..<(try r.count()) { added.append(try r.value()) }
                var removed: [Value] = []
                for _ in 0..<(try r.count()) { removed.append(try r.value()) }
                write = .list(ListChange(replaced: tag == 2, added: added, removed: removed))
            case let tag: throw WireError.malformed("unknown write tag \(tag)")
            }
            versions.append(FieldVersion(dot: dot, timestamp: time, write: write))
        }
        var entries: [ListEntry] = []
        for _ in 0..<(try r.count(minimumSize: 4)) {
            let value = try r.value()
            let dot = try readDot(&r, nodes, context: context)
            let addedAt = try readTime(&r, relativeTo: dot.counter)
            let position = try r.varint()
            guard position <= UInt64(UInt32.max) else { throw WireError.malformed("list position out of range") }
            entries.append(ListEntry(value: value, dot: dot, addedAt: addedAt, position: UInt32(position)))
        }
        guard let state = FieldState(context: context, versions: versions, entries: entries) else {
            throw WireError.malformed("field state breaks its invariants")
        }
        return state
    }
}
