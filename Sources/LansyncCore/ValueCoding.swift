/// The binary encoding of values, node ids, dots and version vectors, shared by the SQLite file
/// and the wire protocol (field states: ``FieldStateCodec``).
///
/// Stable and versioned by the containers that use it (the store's schema version, the
/// protocol's version). Decoding is total and re-checks every invariant the core relies on, so a
/// corrupt file or a lying peer produces a ``DecodingError``, never a crash or a bad merge.
extension ByteWriter {
    public mutating func value(_ v: Value) {
        switch v {
        case .null: byte(0)
        case .bool(let b): byte(b ? 2 : 1)
        case .integer(let i):
            byte(3)
            signedVarint(i)
        case .double(let d):
            byte(4)
            fixed64(d.bitPattern)
        case .string(let s):
            byte(5)
            string(s)
        case .list(let elements):
            byte(6)
            varint(UInt64(elements.count))
            for e in elements { value(e) }
        case .ref(let id):
            // Protocol 1.6 and store v17 (an older reader refuses the tag).
            byte(7)
            string(id.rawValue)
        }
    }

    /// The id's 16 bytes, big-endian, written in place (a million leaves write a dot each).
    public mutating func nodeID(_ id: NodeID) {
        bigEndian(id.high)
        bigEndian(id.low)
    }

    public mutating func dot(_ d: Dot) {
        nodeID(d.node)
        varint(d.counter)
    }

    public mutating func versionVector(_ v: VersionVector) {
        var form = AbsoluteForm()
        FieldStateCodec.write(v, to: &self, form: &form)
    }
}

extension ByteReader {
    /// Lists nested deeper than this are refused (a value of ``Limits/maxValueNesting`` levels
    /// has its innermost elements at this depth).
    public static let maxValueDepth = Limits.maxValueNesting

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
            // A list longer than a whole value may be is a lie; and what is reserved before the
            // elements are read is bounded, so a count alone allocates little (issue 62).
            let n = try count()
            guard n <= Limits.maxValueBytes else { throw fail("a list of more elements than a value may hold") }
            var elements: [Value] = []
            elements.reserveCapacity(Swift.min(n, 1024))
            for _ in 0..<n { elements.append(try value(depth: depth + 1)) }
            return .list(elements)
        case 7:
            let text = try string()
            guard let id = try? ItemID(text) else { throw fail("a link to an invalid item id") }
            return .ref(id)
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
        try FieldStateCodec.readVersionVector(from: &self, form: AbsoluteForm())
    }
}
