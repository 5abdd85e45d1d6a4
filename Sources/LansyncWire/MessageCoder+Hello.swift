import LansyncCore

// The hello (message 1), each minor version's fields in the order they were added: a newer
// minor version appends, so an older node reads what it knows and a newer one the rest.
extension MessageCoder {
    static func encode(_ hello: Hello, into w: inout ByteWriter) {
        w.byte(Tag.hello.rawValue)
        w.raw(magic)
        w.varint(UInt64(hello.version.major))
        w.varint(UInt64(hello.version.minor))
        w.nodeID(hello.nodeID)
        w.nodeID(hello.clusterID)
        w.byte(hello.role.rawValue)
        w.string(hello.name)
        w.versionVector(hello.versionVector)
        if hello.version.minor >= 1 || hello.version.major > 1 {
            w.nodeID(hello.writer)
            w.versionVector(hello.resume)
            if let resumeFor = hello.resumeFor {
                w.byte(1)
                w.nodeID(resumeFor)
            } else {
                w.byte(0)
            }
        }
        if hello.version.minor >= 3 || hello.version.major > 1 {
            w.varint(UInt64(hello.statements.count))
            for statement in hello.statements { w.data(statement) }
        }
        if hello.version.minor >= 4 || hello.version.major > 1 {
            let reports = Self.reportsToSend(hello.reports)
            w.varint(UInt64(reports.count))
            for report in reports {
                w.nodeID(report.nodeID)
                w.varint(report.at)
                w.versionVector(report.seen)
            }
        }
        if hello.version.minor >= 5 || hello.version.major > 1 {
            w.varint(hello.rejoinedAt)
            w.varint(hello.awaySince)
        }
        if hello.version.minor >= 7 || hello.version.major > 1 {
            w.varint(hello.clock)
        }
        encodeSince18(hello, into: &w)
    }

    /// What protocol 1.8 and later added to the hello.
    private static func encodeSince18(_ hello: Hello, into w: inout ByteWriter) {
        if hello.version.minor >= 8 || hello.version.major > 1 {
            w.versionVector(hello.folded)
            // Which reports (by position) were told without the folded writers.
            let marked = Self.reportsToSend(hello.reports).indices.filter { hello.reports[$0].toldFolded }
            w.varint(UInt64(marked.count))
            for index in marked { w.varint(UInt64(index)) }
            w.varint(hello.listenPort)
            let addresses = hello.addresses.prefix(WireLimits.maxAddresses)
            w.varint(UInt64(addresses.count))
            for address in addresses {
                w.nodeID(address.nodeID)
                w.string(String(address.address.utf8.prefix(WireLimits.maxAddressBytes)) ?? "")
                w.varint(address.at)
            }
        }
        if hello.version.minor >= 10 || hello.version.major > 1 {
            w.varint(hello.viewSessions)
            w.byte(hello.outsideView ? 1 : 0)
        }
        if hello.version.minor >= 11 || hello.version.major > 1 {
            w.raw((hello.members ?? MemberSketch()).registers)
        }
        if hello.version.minor >= 12 || hello.version.major > 1 {
            w.varint(hello.staleSince)
        }
        if hello.version.minor >= 13 || hello.version.major > 1 {
            let reports = Self.signedReportsToSend(hello.signedReports)
            w.varint(UInt64(reports.count))
            for report in reports { encode(report, into: &w) }
        }
    }

    static func decodeHello(_ r: inout ByteReader) throws -> Hello {
        guard Array(try r.raw(4)) == magic else { throw WireError.malformed("hello without the LNSY magic") }
        let major = try r.varint()
        let minor = try r.varint()
        guard major <= UInt32.max, minor <= UInt32.max else {
            throw WireError.malformed("protocol version out of range")
        }
        let node = try r.nodeID()
        let cluster = try r.nodeID()
        guard let role = Hello.Role(rawValue: try r.byte()) else { throw WireError.malformed("unknown role") }
        let name = try Self.name(try r.string())
        let vv = try r.versionVector()
        let version = ProtocolVersion(major: UInt32(major), minor: UInt32(minor))
        var hello = Hello(
            version: version,
            nodeID: node,
            clusterID: cluster,
            role: role,
            name: name,
            versionVector: vv
        )
        if minor >= 1 || major > 1 {
            hello.writer = try r.nodeID()
            hello.resume = try r.versionVector()
            switch try r.byte() {
            case 0: hello.resumeFor = nil
            case 1: hello.resumeFor = try r.nodeID()
            default: throw WireError.malformed("bad resume flag")
            }
        }
        if minor >= 3 || major > 1 { hello.statements = try decodeStatements(&r) }
        if minor >= 4 || major > 1 {
            hello.reports = try Self.decodeReports(&r)
        }
        if minor >= 5 || major > 1 {
            hello.rejoinedAt = try r.varint()
            hello.awaySince = try r.varint()
        }
        if minor >= 7 || major > 1 {
            hello.clock = try r.varint()
        }
        try decodeHelloSince18(&hello, &r, version: version)
        return hello
    }

    /// The cluster statements a hello carries (protocol 1.3), within their bounds.
    private static func decodeStatements(_ r: inout ByteReader) throws -> [[UInt8]] {
        var statements: [[UInt8]] = []
        let count = try r.varint()
        guard count <= UInt64(WireLimits.maxStatements) else {
            throw WireError.malformed("too many cluster statements")
        }
        var total = 0
        for _ in 0..<count {
            let statement = try r.data()
            guard statement.count <= WireLimits.maxStatementBytes else {
                throw WireError.malformed("cluster statement too large")
            }
            total += statement.count
            guard total <= WireLimits.maxStatementsBytes else {
                throw WireError.malformed(
                    "cluster statements of more than \(WireLimits.maxStatementsBytes) bytes"
                )
            }
            statements.append(Array(statement))
        }
        return statements
    }

    /// What protocol 1.8 and later added to the hello, read into `hello`.
    private static func decodeHelloSince18(_ hello: inout Hello, _ r: inout ByteReader, version: ProtocolVersion) throws
    {
        if version.minor >= 8 || version.major > 1 {
            hello.folded = try r.versionVector()
            let marked = try r.varint()
            guard marked <= UInt64(hello.reports.count) else {
                throw WireError.malformed("more reports marked folded than reports")
            }
            for _ in 0..<marked {
                let index = try r.varint()
                guard index < UInt64(hello.reports.count) else {
                    throw WireError.malformed("a report marked folded that is not there")
                }
                hello.reports[Int(index)].toldFolded = true
            }
            hello.listenPort = try r.varint()
            guard hello.listenPort <= 65_535 else { throw WireError.malformed("a listening port past 65535") }
            hello.addresses = try Self.decodeAddresses(&r)
        }
        if version.minor >= 10 || version.major > 1 {
            hello.viewSessions = try r.varint()
            switch try r.byte() {
            case 0: hello.outsideView = false
            case 1: hello.outsideView = true
            default: throw WireError.malformed("a hello's outside-view flag that is neither 0 nor 1")
            }
        }
        if version.minor >= 11 || version.major > 1 {
            guard let sketch = MemberSketch(registers: Array(try r.raw(MemberSketch.registerCount))) else {
                throw WireError.malformed("a hello's member count with a register past 59")
            }
            // Nothing counted reads as an older node's hello: no count.
            hello.members = sketch == MemberSketch() ? nil : sketch
        }
        if version.minor >= 12 || version.major > 1 {
            // Only compared with 0 and shown: no bound needed beyond the varint's.
            hello.staleSince = try r.varint()
        }
        if version.minor >= 13 || version.major > 1 {
            hello.signedReports = try Self.decodeSignedReports(&r)
        }
        // A newer minor version may append what this one does not know: skip it.
        if version > ProtocolVersion.current, version.major == ProtocolVersion.current.major {
            _ = try r.raw(r.remaining)
        }
    }
}
