import LansyncCore

/// The compact encoding of a batch: what makes a sync cost little more than the data.
///
/// Two forms share it. Protocol 1.1's (message type 2) carries whole field states without their
/// removal logs. Protocol 1.2's (type 7, `logged`) carries the batch's delta base after its
/// covers, and before each field's payload a byte: 0 for a whole state whose removal log and
/// horizon are empty (most fields: nothing more is written), 2 for a whole state followed by its
/// log and horizon, 1 for a ``FieldDelta`` taken against the batch's base.
///
/// - A node table lists each node id once (16 bytes); everything else refers to it by index.
/// - Field states are written by ``FieldStateCodec`` in the batch's form (``BatchForm``), where
///   most dots and timestamps take one byte each.
/// - Consecutive updates of one item share its id.
///
/// Decoding checks every index, distance and count against the input, then rebuilds each field
/// state through `FieldState`'s validating initialiser.
enum BatchCoding {
    static let stateKind: UInt8 = 0
    static let deltaKind: UInt8 = 1
    static let loggedStateKind: UInt8 = 2

    /// Encodes in the 1.2 form when the batch has a base, else in the 1.1 form (which cannot
    /// carry deltas: a stream for a 1.1 peer has no base, so it never plans one).
    static func encode(sequence: UInt64, _ batch: DeltaBatch, into w: inout ByteWriter) {
        let logged = batch.base != nil
        var form = BatchForm()
        for node in batch.covers.nodes { form.ref(node) }
        for update in batch.updates {
            // In id order, so that the table and the bytes are the same in every process; a
            // context of one node (most) needs no sorted list.
            let context = update.change.context.counters
            if context.count == 1, let only = context.first?.key {
                form.ref(only)
            } else {
                for node in update.change.context.nodes { form.ref(node) }
            }
            for version in update.change.versions {
                guard case .overrule(_, let rejected, _) = version.write else { continue }
                for d in rejected { form.ref(d.node) }
            }
        }

        w.varint(sequence)
        w.varint(UInt64(form.ids.count))
        for id in form.ids { w.nodeID(id) }
        FieldStateCodec.write(batch.covers, to: &w, form: &form)
        if let base = batch.base { FieldStateCodec.write(base, to: &w, form: &form) }
        // Runs of updates of the same item, by where each starts (not copied into arrays of their own).
        let updates = batch.updates
        var starts: [Int] = []
        for i in updates.indices where i == 0 || updates[i].key.item != updates[i - 1].key.item { starts.append(i) }
        w.varint(UInt64(starts.count))
        for (n, start) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1] : updates.count
            w.string(updates[start].key.item.rawValue)
            w.varint(UInt64(end - start))
            for update in updates[start..<end] {
                w.string(update.key.field.rawValue)
                switch update.change {
                case .state(let state):
                    if logged {
                        let log = FieldStateCodec.RemovalLog.fitting(state)
                        w.byte(log == .empty ? stateKind : loggedStateKind)
                        FieldStateCodec.write(state, to: &w, form: &form, removalLog: log)
                    } else {
                        FieldStateCodec.write(state, to: &w, form: &form, removalLog: .absent)
                    }
                case .delta(let delta):
                    precondition(logged, "a delta travels only in a batch with a base (protocol 1.2)")
                    w.byte(deltaKind)
                    FieldStateCodec.write(delta, to: &w, form: &form)
                }
            }
        }
    }

    static func decode(_ r: inout ByteReader, logged: Bool) throws(WireError) -> (UInt64, DeltaBatch) {
        do {
            let sequence = try r.varint()
            let nodeCount = try r.count(minimumSize: 16)
            var nodes: [NodeID] = []
            for _ in 0..<nodeCount { nodes.append(try r.nodeID()) }
            guard Set(nodes).count == nodes.count else {
                throw WireError.malformed("node listed twice in a batch's table")
            }
            let form = BatchForm(ids: nodes)
            let covers = try FieldStateCodec.readVersionVector(from: &r, form: form)
            let base = logged ? try FieldStateCodec.readVersionVector(from: &r, form: form) : nil
            var updates: [FieldUpdate] = []
            for _ in 0..<(try r.count(minimumSize: 2)) {
                let item: ItemID
                do { item = try ItemID(try r.string()) } catch { throw WireError.malformed("invalid item id") }
                for _ in 0..<(try r.count(minimumSize: 4)) {
                    let field = try MessageCoder.fieldName(try r.string())
                    let key = FieldKey(item: item, field: field)
                    let kind = logged ? try r.byte() : stateKind
                    switch kind {
                    case stateKind, loggedStateKind:
                        let log: FieldStateCodec.RemovalLog =
                            !logged ? .absent : kind == loggedStateKind ? .present : .empty
                        let state = try FieldStateCodec.read(from: &r, form: form, removalLog: log)
                        updates.append(FieldUpdate(key: key, state: state))
                    case deltaKind:
                        let delta = try FieldStateCodec.readDelta(from: &r, base: base ?? VersionVector(), form: form)
                        updates.append(FieldUpdate(key: key, delta: delta))
                    default:
                        throw WireError.malformed("unknown field payload kind \(kind)")
                    }
                    guard updates.count <= WireLimits.maxUpdatesPerBatch else {
                        throw WireError.malformed("batch of more than \(WireLimits.maxUpdatesPerBatch) updates")
                    }
                }
            }
            let batch = DeltaBatch(updates: updates, covers: covers, base: base)
            // The base is exactly what the deltas need: one that claims more is not a batch a
            // node sends (and would refuse receivers for nothing).
            guard batch.base == base else {
                throw WireError.malformed("a batch's base claims more than its deltas need")
            }
            return (sequence, batch)
        } catch {
            throw WireError(decoding: error)
        }
    }
}

/// A batch's spelling of node ids, dots and timestamps (``FieldStateForm``): node ids as indexes
/// into the batch's table, a dot's counter as its distance below the field's context entry for its
/// node (usually 0: one byte), a timestamp as its signed distance from the dot's counter (local
/// writes take their counter from the clock, so usually 0).
struct BatchForm: IndexedNodeForm {
    private(set) var ids: [NodeID] = []
    /// Each id's place in `ids`, kept only once the table is longer than ``searched``: a batch
    /// names one node or a few, and searching them is cheaper than hashing an id for every node
    /// of every state written.
    private var index: [NodeID: Int] = [:]
    private static var searched: Int { 8 }

    init() {}

    /// A table read from a batch, for reading its states.
    init(ids: [NodeID]) { self.ids = ids }

    private func place(of id: NodeID) -> Int? {
        ids.count > Self.searched ? index[id] : ids.firstIndex(of: id)
    }

    mutating func ref(_ id: NodeID) {
        guard place(of: id) == nil else { return }
        ids.append(id)
        if ids.count == Self.searched + 1 {
            index = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        } else if ids.count > Self.searched {
            index[id] = ids.count - 1
        }
    }

    func write(_ node: NodeID, to w: inout ByteWriter) {
        // The table is written before the states, so every node must be in it already.
        guard let i = place(of: node) else { preconditionFailure("node \(node) missing from the batch's table") }
        w.varint(UInt64(i))
    }

    func write(_ timestamp: HLCTimestamp, of dot: Dot, to w: inout ByteWriter) {
        w.signedVarint(Int64(bitPattern: timestamp.rawValue &- dot.counter))
    }

    func readNode(from r: inout ByteReader) throws(DecodingError) -> NodeID {
        let i = try r.varint()
        guard i < UInt64(ids.count) else { throw r.fail("node index \(i) outside the batch's table") }
        return ids[Int(i)]
    }

    func readTimestamp(from r: inout ByteReader, of dot: Dot) throws(DecodingError) -> HLCTimestamp {
        HLCTimestamp(rawValue: dot.counter &+ UInt64(bitPattern: try r.signedVarint()))
    }
}
