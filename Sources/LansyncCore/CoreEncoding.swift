/// The binary encoding of core types, shared by the SQLite file and the wire protocol.
///
/// Stable and versioned by the containers that use it (the store's schema version, the
/// protocol's version). Decoding is total and re-checks every invariant the core relies on, so a
/// corrupt file or a lying peer produces a ``DecodingError``, never a crash or a bad merge.
extension ByteWriter {
    public mutating func value(_ v: Value) {
        switch v {
        case .null: byte(0)
        case .bool(let b): byte(b ? 2 : 1)
        case .integer(let i): byte(3); signedVarint(i)
        case .double(let d): byte(4); fixed64(d.bitPattern)
        case .string(let s): byte(5); string(s)
        case .list(let elements):
            byte(6)
            varint(UInt64(elements.count))
            for e in elements { value(e) }
        }
    }

    public mutating func nodeID(_ id: NodeID) { raw(id.bytes) }

    public mutating func dot(_ d: Dot) {
        nodeID(d.node)
        varint(d.counter)
    }

    public mutating func versionVector(_ v: VersionVector) {
        varint(UInt64(v.counters.count))
        for node in v.nodes {
            nodeID(node)
            varint(v[node])
        }
    }

    public mutating func fieldState(_ s: FieldState) {
        byte(1)   // format
        versionVector(s.context)
        varint(UInt64(s.versions.count))
        for v in s.versions {
            dot(v.dot)
            varint(v.timestamp.rawValue)
            switch v.write {
            case .assign(let value):
                byte(0)
                self.value(value)
            case .list(let change):
                byte(change.replaced ? 2 : 1)
                varint(UInt64(change.added.count))
                for e in change.added { value(e) }
                varint(UInt64(change.removed.count))
                for e in change.removed { value(e) }
            case let .overrule(kept, rejected, reason):
                byte(3)
                value(kept)
                varint(UInt64(rejected.count))
                for d in rejected { dot(d) }
                string(reason)
            }
        }
        varint(UInt64(s.entries.count))
        for e in s.entries {
            value(e.value)
            dot(e.dot)
            varint(e.addedAt.rawValue)
            varint(UInt64(e.position))
        }
    }
}

extension ByteReader {
    /// Lists nested deeper than this are refused.
    public static let maxValueDepth = 16

    public mutating func value(depth: Int = 0) throws(DecodingError) -> Value {
        guard depth <= Self.maxValueDepth else { throw fail("list nesting too deep") }
        switch try byte() {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3: return .integer(try signedVarint())
        case 4: return .double(Double(bitPattern: try fixed64()))
        case 5: return .string(try string())
        case 6:
            let n = try count()
            var elements: [Value] = []
            elements.reserveCapacity(n)
            for _ in 0..<n { elements.append(try value(depth: depth + 1)) }
            return .list(elements)
        case let tag: throw fail("unknown value tag \(tag)")
        }
    }

    public mutating func nodeID() throws(DecodingError) -> NodeID { NodeID(bytes: try raw(16)) }

    public mutating func dot() throws(DecodingError) -> Dot {
        let node = try nodeID()
        let counter = try varint()
        guard counter > 0, counter <= Limits.maxCounter else { throw fail("dot counter out of range") }
        return Dot(node: node, counter: counter)
    }

    public mutating func versionVector() throws(DecodingError) -> VersionVector {
        let n = try count(minimumSize: 17)
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<n {
            let node = try nodeID()
            let counter = try varint()
            guard counter <= Limits.maxCounter else { throw fail("version vector counter out of range") }
            guard counters.updateValue(counter, forKey: node) == nil else { throw fail("node listed twice in a version vector") }
        }
        return VersionVector(counters)
    }

    public mutating func fieldState() throws(DecodingError) -> FieldState {
        guard try byte() == 1 else { throw fail("unknown field state format") }
        let context = try versionVector()
        var versions: [FieldVersion] = []
        for _ in 0..<(try count(minimumSize: 19)) {
            let dot = try dot()
            let timestamp = HLCTimestamp(rawValue: try varint())
            let write: FieldVersion.Write
            switch try byte() {
            case 0: write = .assign(try value())
            case 3:
                let kept = try value()
                var rejected: [Dot] = []
                for _ in 0..<(try count(minimumSize: 17)) { rejected.append(try self.dot()) }
                write = .overrule(kept: kept, rejected: rejected, reason: try string())
            case let tag where tag == 1 || tag == 2:
                var added: [Value] = []
                for _ in 0..<(try count()) { added.append(try value()) }
                var removed: [Value] = []
                for _ in 0..<(try count()) { removed.append(try value()) }
                write = .list(ListChange(replaced: tag == 2, added: added, removed: removed))
            case let tag: throw fail("unknown write tag \(tag)")
            }
            versions.append(FieldVersion(dot: dot, timestamp: timestamp, write: write))
        }
        var entries: [ListEntry] = []
        for _ in 0..<(try count(minimumSize: 20)) {
            let value = try value()
            let dot = try dot()
            let addedAt = HLCTimestamp(rawValue: try varint())
            let position = try varint()
            guard position <= UInt64(UInt32.max) else { throw fail("list position out of range") }
            entries.append(ListEntry(value: value, dot: dot, addedAt: addedAt, position: UInt32(position)))
        }
        guard let state = FieldState(context: context, versions: versions, entries: entries) else {
            throw fail("field state breaks its invariants")
        }
        return state
    }
}

extension FieldState {
    /// The state's binary encoding.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        w.fieldState(self)
        return w.bytes
    }

    /// Decodes a whole buffer holding one field state.
    public init(decoding bytes: [UInt8]) throws(DecodingError) {
        var r = ByteReader(bytes)
        self = try r.fieldState()
        guard r.isAtEnd else { throw r.fail("trailing bytes after a field state") }
    }
}
