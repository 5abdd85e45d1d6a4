/// The one binary codec of field states and their writes, used by the SQLite file and the wire.
///
/// Both containers write the same structure (context, versions with their writes, list entries,
/// then, where the container carries it, the removal log and its horizon) in the same order; they differ only in how a node id, a dot and a timestamp are spelled, which a
/// ``FieldStateForm`` decides:
/// - ``AbsoluteForm`` (the replica file): 16-byte node ids, absolute counters and timestamps;
/// - the wire's batch form: an index into the batch's node table, a dot's counter as its distance
///   below the field's context, a timestamp as its distance from the dot's counter.
///
/// Decoding is total and rebuilds the state through ``FieldState``'s validating initialiser, so a
/// corrupt file or a lying peer produces a ``DecodingError``, never a crash or a bad merge.
public enum FieldStateCodec {
    // Tags of ``FieldVersion/Write``: stable, shared by every container.
    static let assignTag: UInt8 = 0
    static let listTag: UInt8 = 1
    static let listReplacedTag: UInt8 = 2
    static let overruleTag: UInt8 = 3
    /// An unset (protocol 1.6, store v17): no payload.
    static let unsetTag: UInt8 = 4
    /// The longest overrule reason kept when decoding (a peer cannot make history rows huge).
    public static let maxReasonLength = 256

    /// How a container carries a state's removal log.
    public enum RemovalLog: Sendable {
        /// Not at all (a container older than the log): a reader takes the whole context as the
        /// horizon, vouching for no removal.
        case absent
        /// Not, because it is empty and so is the horizon (the container says so by its tag).
        case empty
        /// Written after the list tags.
        case present

        /// The form that carries `state`'s log in the fewest bytes, for a container that has both.
        public static func fitting(_ state: FieldState) -> RemovalLog {
            state.removals.isEmpty && state.horizon.isEmpty ? .empty : .present
        }
    }

    /// Writes a state, with its removal log and horizon if `removalLog` is `.present`.
    public static func write<Form: FieldStateForm>(
        _ s: FieldState,
        to w: inout ByteWriter,
        form: inout Form,
        removalLog: RemovalLog
    ) {
        write(s.context, to: &w, form: &form)
        write(s.versions, context: s.context, to: &w, form: &form)
        write(s.entries, context: s.context, to: &w, form: &form)
        if removalLog == .present {
            write(s.removals, context: s.context, to: &w, form: &form)
            write(s.horizon, to: &w, form: &form)
        }
    }

    /// Writes a delta (its base is the container's: a batch names it once).
    public static func write<Form: FieldStateForm>(_ d: FieldDelta, to w: inout ByteWriter, form: inout Form) {
        write(d.context, to: &w, form: &form)
        write(d.horizon, to: &w, form: &form)
        write(d.versions, context: d.context, to: &w, form: &form)
        w.varint(UInt64(d.keptVersions.count))
        for dot in d.keptVersions { form.write(dot, context: d.context, to: &w) }
        write(d.entries, context: d.context, to: &w, form: &form)
        write(d.removals, context: d.context, to: &w, form: &form)
    }

    static func write<Form: FieldStateForm>(
        _ versions: [FieldVersion],
        context: VersionVector,
        to w: inout ByteWriter,
        form: inout Form
    ) {
        w.varint(UInt64(versions.count))
        for v in versions {
            form.write(v.dot, context: context, to: &w)
            form.write(v.timestamp, of: v.dot, to: &w)
            write(v.write, to: &w, form: &form)
        }
    }

    static func write<Form: FieldStateForm>(
        _ entries: [ListEntry],
        context: VersionVector,
        to w: inout ByteWriter,
        form: inout Form
    ) {
        w.varint(UInt64(entries.count))
        for e in entries {
            w.value(e.value)
            form.write(e.dot, context: context, to: &w)
            form.write(e.addedAt, of: e.dot, to: &w)
            w.varint(UInt64(e.position))
        }
    }

    static func write<Form: FieldStateForm>(
        _ removals: [ListRemoval],
        context: VersionVector,
        to w: inout ByteWriter,
        form: inout Form
    ) {
        w.varint(UInt64(removals.count))
        for removal in removals {
            form.write(removal.by, context: context, to: &w)
            w.varint(UInt64(removal.tags.count))
            for tag in removal.tags {
                w.value(tag.value)
                form.write(tag.dot, context: context, to: &w)
            }
        }
    }

    public static func write<Form: FieldStateForm>(
        _ write: FieldVersion.Write,
        to w: inout ByteWriter,
        form: inout Form
    ) {
        switch write {
        case .assign(let value):
            w.byte(assignTag)
            w.value(value)
        case .unset:
            w.byte(unsetTag)
        case .list(let change):
            w.byte(change.replaced ? listReplacedTag : listTag)
            w.varint(UInt64(change.added.count))
            for e in change.added { w.value(e) }
            w.varint(UInt64(change.removed.count))
            for e in change.removed { w.value(e) }
        case let .overrule(kept, rejected, reason):
            w.byte(overruleTag)
            w.value(kept)
            w.varint(UInt64(rejected.count))
            for d in rejected {
                form.write(d.node, to: &w)
                w.varint(d.counter)
            }
            w.string(reason)
        }
    }

    public static func write<Form: FieldStateForm>(_ v: VersionVector, to w: inout ByteWriter, form: inout Form) {
        w.varint(UInt64(v.counters.count))
        // In node order; a vector of one node (a field written by one node: most) needs no
        // sorted copy, and the entries are read as pairs rather than looked up again by node.
        if v.counters.count == 1, let (node, counter) = v.counters.first {
            form.write(node, to: &w)
            w.varint(counter)
            return
        }
        for (node, counter) in v.counters.sorted(by: { $0.key < $1.key }) {
            form.write(node, to: &w)
            w.varint(counter)
        }
    }

    public static func read<Form: FieldStateForm>(
        from r: inout ByteReader,
        form: Form,
        removalLog: RemovalLog
    ) throws(DecodingError) -> FieldState {
        let context = try readVersionVector(from: &r, form: form)
        let versions = try readVersions(from: &r, context: context, form: form)
        let entries = try readEntries(from: &r, context: context, form: form)
        var removals: [ListRemoval] = []
        var horizon: VersionVector? = removalLog == .absent ? nil : VersionVector()
        if removalLog == .present {
            removals = try readRemovals(from: &r, context: context, form: form)
            horizon = try readVersionVector(from: &r, form: form)
        }
        guard
            let state = FieldState(
                context: context,
                versions: versions,
                entries: entries,
                removals: removals,
                horizon: horizon
            )
        else {
            throw r.fail("field state breaks its invariants")
        }
        return state
    }

    /// Reads a delta taken against `base` (the container's).
    public static func readDelta<Form: FieldStateForm>(
        from r: inout ByteReader,
        base: VersionVector,
        form: Form
    ) throws(DecodingError) -> FieldDelta {
        let context = try readVersionVector(from: &r, form: form)
        let horizon = try readVersionVector(from: &r, form: form)
        let versions = try readVersions(from: &r, context: context, form: form)
        var kept: [Dot] = []
        for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 1)) {
            kept.append(try form.readDot(from: &r, context: context))
        }
        let entries = try readEntries(from: &r, context: context, form: form)
        let removals = try readRemovals(from: &r, context: context, form: form)
        guard
            let delta = FieldDelta(
                base: base,
                context: context,
                horizon: horizon,
                versions: versions,
                keptVersions: kept,
                entries: entries,
                removals: removals
            )
        else {
            throw r.fail("field delta breaks its invariants")
        }
        return delta
    }

    static func readVersions<Form: FieldStateForm>(
        from r: inout ByteReader,
        context: VersionVector,
        form: Form
    ) throws(DecodingError) -> [FieldVersion] {
        var versions: [FieldVersion] = []
        for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 3)) {
            let dot = try form.readDot(from: &r, context: context)
            let timestamp = try form.readTimestamp(from: &r, of: dot)
            let write = try readWrite(from: &r, context: context, form: form)
            versions.append(FieldVersion(dot: dot, timestamp: timestamp, write: write))
        }
        return versions
    }

    static func readEntries<Form: FieldStateForm>(
        from r: inout ByteReader,
        context: VersionVector,
        form: Form
    ) throws(DecodingError) -> [ListEntry] {
        var entries: [ListEntry] = []
        for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 4)) {
            let value = try r.value()
            let dot = try form.readDot(from: &r, context: context)
            let addedAt = try form.readTimestamp(from: &r, of: dot)
            let position = try r.varint()
            guard position <= UInt64(UInt32.max) else { throw r.fail("list position out of range") }
            entries.append(ListEntry(value: value, dot: dot, addedAt: addedAt, position: UInt32(position)))
        }
        return entries
    }

    static func readRemovals<Form: FieldStateForm>(
        from r: inout ByteReader,
        context: VersionVector,
        form: Form
    ) throws(DecodingError) -> [ListRemoval] {
        var removals: [ListRemoval] = []
        for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 2)) {
            let by = try form.readDot(from: &r, context: context)
            var tags: [ListTag] = []
            for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 2)) {
                let value = try r.value()
                tags.append(ListTag(value: value, dot: try form.readDot(from: &r, context: context)))
            }
            removals.append(ListRemoval(by: by, tags: tags))
        }
        return removals
    }

    static func readWrite<Form: FieldStateForm>(
        from r: inout ByteReader,
        context: VersionVector,
        form: Form
    ) throws(DecodingError) -> FieldVersion.Write {
        switch try r.byte() {
        case assignTag:
            return .assign(try r.value())
        case unsetTag:
            return .unset
        case overruleTag:
            let kept = try r.value()
            var rejected: [Dot] = []
            for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 1)) {
                let node = try form.readNode(from: &r)
                let counter = try r.varint()
                // Only versions the relay held can be overruled, so they lie inside the context.
                guard counter > 0, counter <= Limits.maxCounter, context.contains(Dot(node: node, counter: counter))
                else {
                    throw r.fail("overruled dot outside its field's context")
                }
                rejected.append(Dot(node: node, counter: counter))
            }
            let reason = String(try r.string().prefix(maxReasonLength))
            // No lansync ever wrote a NUL in a reason (it comes from a machine's name and a
            // command-line argument), and a store may not hold one (PostgreSQL's text refuses it,
            // SQLite's cuts it): refused, as a name is (issue 62).
            guard !reason.utf8.contains(0) else { throw r.fail("an overrule's reason with a NUL") }
            return .overrule(kept: kept, rejected: rejected, reason: reason)
        case let tag where tag == listTag || tag == listReplacedTag:
            var added: [Value] = []
            for _ in 0..<(try r.count()) { added.append(try r.value()) }
            var removed: [Value] = []
            for _ in 0..<(try r.count()) { removed.append(try r.value()) }
            return .list(ListChange(replaced: tag == listReplacedTag, added: added, removed: removed))
        case let tag:
            throw r.fail("unknown write tag \(tag)")
        }
    }

    public static func readVersionVector<Form: FieldStateForm>(
        from r: inout ByteReader,
        form: Form
    ) throws(DecodingError) -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<(try r.count(minimumSize: form.minimumNodeSize + 1)) {
            let node = try form.readNode(from: &r)
            let counter = try r.varint()
            guard counter <= Limits.maxCounter else { throw r.fail("version vector counter out of range") }
            guard counters.updateValue(counter, forKey: node) == nil else {
                throw r.fail("node listed twice in a version vector")
            }
        }
        return VersionVector(counters)
    }
}

/// How a container spells node ids, dots and timestamps inside ``FieldStateCodec``'s structure.
public protocol FieldStateForm {
    /// The fewest bytes a node reference takes (bounds counts against the input's size).
    var minimumNodeSize: Int { get }
    mutating func write(_ node: NodeID, to w: inout ByteWriter)
    mutating func write(_ dot: Dot, context: VersionVector, to w: inout ByteWriter)
    func write(_ timestamp: HLCTimestamp, of dot: Dot, to w: inout ByteWriter)
    func readNode(from r: inout ByteReader) throws(DecodingError) -> NodeID
    func readDot(from r: inout ByteReader, context: VersionVector) throws(DecodingError) -> Dot
    func readTimestamp(from r: inout ByteReader, of dot: Dot) throws(DecodingError) -> HLCTimestamp
}

/// A form that names nodes by a small index (a batch's node table, the replica file's `node`
/// rows) and writes a dot's counter as its distance below the field's context entry for its node:
/// usually 0, so a dot takes two bytes. Conforming types say how a node is referenced.
public protocol IndexedNodeForm: FieldStateForm {}

extension IndexedNodeForm {
    public var minimumNodeSize: Int { 1 }

    public mutating func write(_ dot: Dot, context: VersionVector, to w: inout ByteWriter) {
        write(dot.node, to: &w)
        w.varint(context[dot.node] - dot.counter)
    }

    public func readDot(from r: inout ByteReader, context: VersionVector) throws(DecodingError) -> Dot {
        let node = try readNode(from: &r)
        let below = try r.varint()
        guard below < context[node] else { throw r.fail("dot outside its field's context") }
        return Dot(node: node, counter: context[node] - below)
    }
}

/// The replica file's first form: every node id in full, counters and timestamps as they are.
public struct AbsoluteForm: FieldStateForm {
    public init() {}

    public var minimumNodeSize: Int { 16 }
    public func write(_ node: NodeID, to w: inout ByteWriter) { w.nodeID(node) }
    public func write(_ dot: Dot, context: VersionVector, to w: inout ByteWriter) { w.dot(dot) }
    public func write(_ timestamp: HLCTimestamp, of dot: Dot, to w: inout ByteWriter) { w.varint(timestamp.rawValue) }
    public func readNode(from r: inout ByteReader) throws(DecodingError) -> NodeID { try r.nodeID() }
    public func readDot(from r: inout ByteReader, context: VersionVector) throws(DecodingError) -> Dot { try r.dot() }
    public func readTimestamp(from r: inout ByteReader, of dot: Dot) throws(DecodingError) -> HLCTimestamp {
        HLCTimestamp(rawValue: try r.varint())
    }
}

extension FieldState {
    /// The format byte of the absolute form without a removal log (replica files of schemas v1–v7).
    public static let absoluteFormat: UInt8 = 1
    /// The format byte of the absolute form with the removal log.
    public static let absoluteLoggedFormat: UInt8 = 3

    /// The state's self-contained binary encoding: a format byte, then the absolute form with the
    /// removal log.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.byte(Self.absoluteLoggedFormat)
        var form = AbsoluteForm()
        FieldStateCodec.write(self, to: &w, form: &form, removalLog: .present)
        return w.bytes
    }

    /// Decodes a whole buffer holding one field state in an absolute format (1 or 3).
    public init(decoding bytes: [UInt8]) throws(DecodingError) {
        var r = ByteReader(bytes)
        let format = try r.byte()
        guard format == Self.absoluteFormat || format == Self.absoluteLoggedFormat else {
            throw r.fail("unknown field state format")
        }
        self = try FieldStateCodec.read(
            from: &r,
            form: AbsoluteForm(),
            removalLog: format == Self.absoluteLoggedFormat ? .present : .absent
        )
        guard r.isAtEnd else { throw r.fail("trailing bytes after a field state") }
    }
}
