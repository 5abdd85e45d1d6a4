import Foundation
import LansyncCore
import LansyncTestSupport
import LansyncWire
import Testing

@Suite struct MessageCoderTests {
    static let a = NodeID(high: 0x0102_0304_0506_0708, low: 0x090A_0B0C_0D0E_0F10)
    static let c = NodeID(high: 0xAAAA_AAAA_AAAA_AAAA, low: 0xBBBB_BBBB_BBBB_BBBB)

    /// The bytes of protocol 1 are fixed: a change here breaks old nodes, and needs a new version.
    /// A 1.0 hello still encodes and decodes as it did.
    @Test func goldenHello() throws {
        let hello = Message.hello(
            Hello(
                version: ProtocolVersion(major: 1, minor: 0),
                nodeID: Self.a,
                clusterID: Self.c,
                role: .peer,
                name: "kitchen",
                versionVector: VersionVector([Self.a: 300])
            )
        )
        let hex = Frame.encode(hello).map { String(format: "%02x", $0) }.joined()
        #expect(
            hex == "00000043" + "01" + "4c4e5359" + "01" + "00"
                + "0102030405060708090a0b0c0d0e0f10" + "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb" + "00"
                + "07" + "6b69746368656e" + "01" + "0102030405060708090a0b0c0d0e0f10" + "ac02"
        )
        #expect(try MessageCoder.decode(MessageCoder.encode(hello)) == hello)
    }

    /// 1.1 appends the writer id and the resume point (its vector, then 0, or 1 and a writer id).
    @Test func goldenHello11() throws {
        let hello = Message.hello(
            Hello(
                version: ProtocolVersion(major: 1, minor: 1),
                nodeID: Self.a,
                clusterID: Self.c,
                role: .peer,
                name: "k",
                versionVector: VersionVector(),
                writer: Self.c,
                resume: VersionVector([Self.a: 2]),
                resumeFor: Self.a
            )
        )
        let hex = Frame.encode(hello).map { String(format: "%02x", $0) }.joined()
        #expect(
            hex == "0000005e" + "01" + "4c4e5359" + "01" + "01"
                + "0102030405060708090a0b0c0d0e0f10" + "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb" + "00" + "01" + "6b" + "00"
                + "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb" + "01" + "0102030405060708090a0b0c0d0e0f10" + "02"
                + "01" + "0102030405060708090a0b0c0d0e0f10"
        )
        #expect(try MessageCoder.decode(MessageCoder.encode(hello)) == hello)
        // A later minor version may append fields this one skips; the same minor may not.
        var newer = MessageCoder.encode(
            .hello(
                Hello(
                    version: ProtocolVersion(major: 1, minor: ProtocolVersion.current.minor + 1),
                    nodeID: Self.a,
                    clusterID: Self.c,
                    role: .peer,
                    name: "k",
                    versionVector: VersionVector()
                )
            )
        )
        newer += [1, 2, 3]
        guard case .hello(let decoded) = try MessageCoder.decode(newer) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.version.minor == ProtocolVersion.current.minor + 1)
        var same = MessageCoder.encode(hello)
        same += [1]
        #expect(throws: WireError.self) { try MessageCoder.decode(same) }
    }

    /// 1.7 appends the sender's wall clock; a 1.6 hello has none and reads as 0.
    @Test func hello17CarriesTheClock() throws {
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .peer, name: "a", versionVector: VersionVector())
        hello.clock = 1_800_000_000_123
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 6)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.clock == 0)
    }

    /// A relay of a thousand members holds a thousand reports of a thousand writers each: its
    /// hello carries as many as fit the limits every receiver holds a hello to, and is read back
    /// (W10 found hellos cut by count alone, which every node refused as malformed).
    @Test func aLargeClustersHelloCarriesTheReportsThatFit() throws {
        let writers = (0..<1000).map { NodeID(high: 9, low: UInt64($0)) }
        let seen = VersionVector(Dictionary(uniqueKeysWithValues: writers.map { ($0, UInt64(5)) }))
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .relay, name: "r", versionVector: seen)
        hello.reports = writers.map { Hello.Report(nodeID: $0, at: 7, seen: seen, toldFolded: $0.low == 3) }
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(hello))) else {
            Issue.record("not a hello")
            return
        }
        let fit = WireLimits.maxReportEntries / 1000
        #expect(decoded.reports.count == fit)
        #expect(decoded.reports == Array(hello.reports.prefix(fit)))
        #expect(decoded.reports.filter(\.toldFolded).map(\.nodeID) == [writers[3]])
        // Small reports are still cut at the count.
        hello.reports = writers.map { Hello.Report(nodeID: $0, at: 7, seen: VersionVector([$0: 1])) }
        guard case .hello(let small) = try MessageCoder.decode(MessageCoder.encode(.hello(hello))) else {
            Issue.record("not a hello")
            return
        }
        #expect(small.reports.count == WireLimits.maxReports)
    }

    /// 1.5 appends, after the statements and the members' reports, when the sender rejoined and
    /// since when it counts itself away (two varints); a 1.4 hello has neither and reads as 0.
    @Test func hello15CarriesTheRejoinAndTheAway() throws {
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .relay, name: "r", versionVector: VersionVector())
        hello.reports = [Hello.Report(nodeID: Self.c, at: 7, seen: VersionVector([Self.c: 3]))]
        hello.rejoinedAt = 1_700_000_000_000
        hello.awaySince = 300
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        #expect(
            Array(bytes.dropLast(MemberSketch.registerCount + 2).suffix(9)) == [
                0xAC, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            ],
            "awaySince 300, then the clock (1.7, 0 here), then no folded writers, no report told folded, no port and no address (1.8), then no view session and not outside the view (1.10), then no count of members (1.11), then not stale (1.12), then no signed report (1.13)"
        )
        #expect(bytes.suffix(MemberSketch.registerCount + 2).allSatisfy { $0 == 0 })
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 4)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.rejoinedAt == 0 && decoded.awaySince == 0 && decoded.reports == hello.reports)
        #expect(ProtocolError.Code.away.rawValue == 15 && !ProtocolError.Code.away.isPermanent)
    }

    /// 1.12 appends since when the sender's replica is stale (a varint at the very end); a 1.11
    /// hello has none and reads as 0, and a 1.11 node reads a 1.12 hello, skipping it.
    @Test func hello112SaysWhetherTheReplicaIsStale() throws {
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .relay, name: "r", versionVector: VersionVector())
        hello.awaySince = 1_700_000_000_000
        hello.staleSince = 1_700_000_000_000
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        #expect(
            Array(bytes.dropLast().suffix(6)) == [0x80, 0xD0, 0x95, 0xFF, 0xBC, 0x31],
            "the varint of the time, then (1.13) no signed report"
        )
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 11)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.staleSince == 0 && decoded.awaySince == hello.awaySince)
        #expect(MessageCoder.encode(.hello(old)).count == bytes.count - 7)
    }

    /// 1.13 appends the members' signed reports (each its id, time, vector, a 33-byte key and a
    /// 64-byte signature); a 1.12 node reads the hello, skipping them, and a 1.12 hello has none.
    /// The sender's own report also travels as a message of its own (type 16).
    @Test func hello113CarriesSignedReports() throws {
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .peer, name: "a", versionVector: VersionVector())
        let report = Hello.SignedReport(
            nodeID: Self.a,
            at: 1_700_000_000_000,
            seen: VersionVector([Self.a: 3, Self.c: 9]),
            key: [2] + [UInt8](repeating: 7, count: 32),
            signature: [UInt8](repeating: 9, count: 64)
        )
        hello.signedReports = [report, report]
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        #expect(Array(bytes.suffix(64)) == report.signature, "the last report's signature, last")
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 12)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.signedReports.isEmpty)
        #expect(try MessageCoder.decode(MessageCoder.encode(.report(report))) == .report(report))
        #expect(Hello.SignedReport(encoded: report.encoded) == report)
        #expect(Hello.SignedReport(encoded: report.encoded + [0]) == nil)
        #expect(Hello.SignedReport(encoded: Array(report.encoded.dropLast())) == nil)
        // A key or signature cut short is refused, not read into the next field.
        var short = MessageCoder.encode(.report(report))
        short.removeLast(10)
        #expect(throws: WireError.self) { try MessageCoder.decode(short) }
        // What is signed names the cluster: the same report in another cluster signs other bytes.
        #expect(report.signedBytes(cluster: Self.c) != report.signedBytes(cluster: Self.a))
    }

    /// 1.8 appends the writers the sender folded, and which reports were told without them; the
    /// sender's own vectors read back whole (``Hello/unfolded()``), the reports stay as told with
    /// their mark, and a 1.7 hello has neither.
    @Test func hello18CarriesTheFoldedWriters() throws {
        let retired = NodeID(high: Self.a.high, low: 99)
        var hello = Hello(
            nodeID: Self.a,
            clusterID: Self.c,
            role: .peer,
            name: "a",
            versionVector: VersionVector([Self.a: 5]),
            resume: VersionVector([Self.c: 2])
        )
        hello.reports = [
            Hello.Report(nodeID: Self.c, at: 7, seen: VersionVector([Self.c: 3]), toldFolded: true),
            Hello.Report(nodeID: Self.a, at: 8, seen: VersionVector([Self.a: 1])),
        ]
        hello.folded = VersionVector([retired: 40])
        hello.listenPort = 7420
        hello.addresses = [Hello.Address(nodeID: Self.c, address: "[fe80::1%eth0]:7420", at: 9)]
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        let whole = hello.unfolded()
        #expect(whole.versionVector == VersionVector([Self.a: 5, retired: 40]))
        #expect(whole.resume == VersionVector([Self.c: 2, retired: 40]))
        #expect(whole.reports == hello.reports, "reports are joined back by the receiver's store, for writers it knows")
        // A mark naming a report that is not there is refused.
        var marked = hello
        marked.reports = []
        marked.listenPort = 0
        marked.addresses = []
        var lying = MessageCoder.encode(.hello(marked))
        // No mark, port 0, no address, no view session, inside the view, no count of members,
        // not stale, no signed report.
        lying.removeLast(7 + MemberSketch.registerCount)
        // One mark, on report 0, of none.
        lying += [1, 0, 0, 0, 0, 0] + Array(repeating: 0, count: MemberSketch.registerCount) + [0, 0]
        #expect(throws: WireError.malformed("more reports marked folded than reports")) {
            try MessageCoder.decode(lying)
        }
        #expect(throws: WireError.self) { try MessageCoder.decode(lying) }
        var badPort = hello
        badPort.listenPort = 70_000
        #expect(throws: WireError.self) { try MessageCoder.decode(MessageCoder.encode(.hello(badPort))) }
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 7)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.folded.isEmpty && decoded.unfolded() == decoded)
        #expect(decoded.reports.allSatisfy { !$0.toldFolded })
    }

    /// 1.10 appends how many view sessions the sender holds and whether the session is a round
    /// outside the views; a 1.9 hello has neither and reads as alone, inside (never refused for
    /// a full view); a flag other than 0 or 1 is refused.
    @Test func hello110CarriesTheView() throws {
        var hello = Hello(nodeID: Self.a, clusterID: Self.c, role: .peer, name: "a", versionVector: VersionVector())
        hello.viewSessions = 300
        hello.outsideView = true
        let bytes = MessageCoder.encode(.hello(hello))
        #expect(try MessageCoder.decode(bytes) == .hello(hello))
        // Then the count of members (1.11), whether the replica is stale (1.12, one byte here)
        // and the signed reports (1.13, none: one byte).
        #expect(Array(bytes.dropLast(MemberSketch.registerCount + 2).suffix(3)) == [0xAC, 0x02, 0x01])
        var bad = bytes
        bad[bad.count - 3 - MemberSketch.registerCount] = 2
        #expect(throws: WireError.self) { try MessageCoder.decode(bad) }
        var old = hello
        old.version = ProtocolVersion(major: 1, minor: 9)
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(old))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.viewSessions == 0 && !decoded.outsideView)
    }

    /// 1.10's lazy push: `have` carries a version vector, `prune` and `graft` nothing.
    @Test func goldenHavePruneGraft() throws {
        #expect(Frame.encode(.prune) == [0, 0, 0, 1, 13])
        #expect(Frame.encode(.graft) == [0, 0, 0, 1, 14])
        #expect(Frame.encode(.have(versionVector: VersionVector())) == [0, 0, 0, 2, 12, 0])
        let have = Message.have(versionVector: VersionVector([Self.a: 7, Self.c: 300]))
        #expect(try MessageCoder.decode(MessageCoder.encode(have)) == have)
        #expect(throws: WireError.self) { try MessageCoder.decode([13, 0]) }
    }

    /// 1.11's hop count: a byte before a batch or final batch, which is encoded as on its own;
    /// before anything else (another hop count included) it is refused.
    @Test func goldenReached() throws {
        var field = FieldState()
        field.assign(.integer(1), dot: Dot(node: Self.a, counter: 1), timestamp: HLCTimestamp(rawValue: 1))
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: .named("i"), field: .named("v")), state: field)],
            covers: VersionVector([Self.a: 1])
        )
        let plain = MessageCoder.encode(.batch(sequence: 3, batch))
        #expect(MessageCoder.encode(.reached(hops: 4, .batch(sequence: 3, batch))) == [15, 4] + plain)
        for inner in [
            Message.batch(sequence: 3, batch), .finalBatch(sequence: 4, batch, done: VersionVector([Self.a: 1])),
        ] {
            let message = Message.reached(hops: 200, inner)
            let decoded = try MessageCoder.decode(MessageCoder.encode(message))
            #expect(decoded.hops == 200)
            #expect(MessageCoder.encode(decoded.withoutHops) == MessageCoder.encode(inner))
            #expect(decoded.isBatch && decoded.batchCovers == batch.covers)
        }
        #expect(throws: WireError.self) { try MessageCoder.decode([15, 1] + MessageCoder.encode(.ack(sequence: 1))) }
        #expect(throws: WireError.self) { try MessageCoder.decode([15, 1, 15, 1] + plain) }
        #expect(throws: WireError.self) { try MessageCoder.decode([15, 1]) }
        #expect(throws: WireError.self) { try MessageCoder.decode([15, 255] + plain) }
        #expect(throws: WireError.self) { try MessageCoder.decode([15]) }
        // Nested as deep as a frame allows: refused at the first level, not recursed into.
        #expect(throws: WireError.self) { try MessageCoder.decode(Array(repeating: 15, count: 1 << 20)) }
    }

    /// 1.14's proofs: before a batch (or final batch), which is encoded as on its own, and itself
    /// after a hop count; anything out of its bounds is refused.
    @Test func goldenProved() throws {
        var field = FieldState()
        field.assign(.integer(1), dot: Dot(node: Self.a, counter: 2), timestamp: HLCTimestamp(rawValue: 1))
        var batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: .named("i"), field: .named("v")), state: field)],
            covers: VersionVector([Self.a: 2])
        )
        let plain = MessageCoder.encode(.batch(sequence: 3, batch))
        let run = SignedRun(
            writer: Self.a,
            first: 1,
            last: 2,
            key: Array(repeating: 2, count: 33),
            signature: Array(repeating: 7, count: 64)
        )
        let certificate: [UInt8] = [0x30, 1, 0]
        batch.proofs = [
            RunProof(
                run: run,
                leaves: [try #require(RunLeaf(counter: 1, field: .type, digestBytes: Array(repeating: 9, count: 32)))],
                certificate: certificate
            )
        ]
        let proofBytes: [UInt8] =
            [1] + Self.a.bytes + [1, 2] + run.key + run.signature + [3] + certificate + [1, 1, 5] + Array("_type".utf8)
            + Array(repeating: 9, count: 32)
        #expect(MessageCoder.encode(.batch(sequence: 3, batch)) == [17] + proofBytes + plain)
        for message in [
            Message.batch(sequence: 3, batch), .finalBatch(sequence: 4, batch, done: VersionVector([Self.a: 2])),
            .reached(hops: 2, .batch(sequence: 3, batch)),
        ] {
            let decoded = try MessageCoder.decode(MessageCoder.encode(message))
            #expect(MessageCoder.encode(decoded) == MessageCoder.encode(message))
            #expect(decoded.batchProofs == batch.proofs)
        }
        // A batch without proofs is encoded as before 1.14.
        #expect(MessageCoder.encode(Message.batch(sequence: 3, batch).withoutProofs) == plain)
        let ack = MessageCoder.encode(.ack(sequence: 1))
        #expect(throws: WireError.self) { try MessageCoder.decode([17] + proofBytes + ack) }
        #expect(throws: WireError.self) { try MessageCoder.decode([17] + proofBytes + [17] + proofBytes + plain) }
        #expect(throws: WireError.self) { try MessageCoder.decode([17] + proofBytes) }
        // A leaf outside its run, a run longer than a run may be, a count past the data.
        var outside = proofBytes
        outside[1 + 16 + 2 + 33 + 64 + 4 + 1] = 3
        #expect(throws: WireError.self) { try MessageCoder.decode([17] + outside + plain) }
        var long = proofBytes
        long.replaceSubrange((1 + 16 + 1)...(1 + 16 + 1), with: [0xD8, 0x04])  // dots 1 to 600
        #expect(throws: WireError.self) { try MessageCoder.decode([17] + long + plain) }
        #expect(throws: WireError.self) { try MessageCoder.decode([17, 0xFF, 0xFF, 0x03] + plain) }
        // A certificate past its bound.
        var large = batch
        large.proofs[0].certificate = Array(repeating: 0x30, count: RunProof.maxCertificateBytes + 1)
        #expect(throws: WireError.self) { try MessageCoder.decode(MessageCoder.encode(.batch(sequence: 3, large))) }
        // A proof without a certificate: the length 0.
        var bare = batch
        bare.proofs[0].certificate = nil
        let bareBytes = MessageCoder.encode(.batch(sequence: 3, bare))
        #expect(bareBytes.count == [17].count + proofBytes.count - certificate.count + plain.count)
        #expect(try MessageCoder.decode(bareBytes).batchProofs == bare.proofs)
    }

    @Test func goldenAckDoneError() {
        #expect(Frame.encode(.ack(sequence: 5)) == [0, 0, 0, 2, 3, 5])
        #expect(Frame.encode(.done(versionVector: VersionVector())) == [0, 0, 0, 2, 4, 0])
        #expect(Frame.encode(.error(ProtocolError(.busy, "x"))) == [0, 0, 0, 4, 6, 10, 1, 0x78])
    }

    @Test func goldenBatch() throws {
        var field = FieldState()
        field.assign(.string("Climb"), dot: Dot(node: Self.a, counter: 1000), timestamp: HLCTimestamp(rawValue: 1000))
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: try ItemID("t1"), field: try FieldName("title")), state: field)],
            covers: VersionVector([Self.a: 1000])
        )
        let hex = Frame.encode(.batch(sequence: 1, batch)).map { String(format: "%02x", $0) }.joined()
        #expect(
            hex == "00000033" + "02" + "01"  // batch, sequence 1
                + "01" + "0102030405060708090a0b0c0d0e0f10"  // node table: one node
                + "01" + "00" + "e807"  // covers {#0: 1000}
                + "01" + "02" + "7431" + "01"  // one run: item "t1", one field
                + "05" + "7469746c65"  // "title"
                + "01" + "00" + "e807"  // context {#0: 1000}
                + "01" + "00" + "00" + "00"  // one version: #0, 0 below, same time
                + "00" + "05" + "05" + "436c696d62"  // assign "Climb"
                + "00"
        )  // no list tags
    }

    /// Protocol 1.2: one element added to a list the receiver holds (as of #0's counter 1) is a
    /// delta of that element alone.
    @Test func goldenDeltaBatch() throws {
        var field = FieldState()
        field.assign(
            .list([.string("a"), .string("b")]),
            dot: Dot(node: Self.a, counter: 1),
            timestamp: HLCTimestamp(rawValue: 1)
        )
        field.changeList(
            .string("c"),
            add: true,
            dot: Dot(node: Self.a, counter: 2),
            timestamp: HLCTimestamp(rawValue: 2)
        )
        let base = VersionVector([Self.a: 1])
        let batch = DeltaBatch(
            updates: [
                FieldUpdate(
                    key: FieldKey(item: try ItemID("t1"), field: try FieldName("tags")),
                    change: field.change(since: base)
                )
            ],
            covers: VersionVector([Self.a: 2]),
            base: base
        )
        let hex = Frame.encode(.batch(sequence: 1, batch)).map { String(format: "%02x", $0) }.joined()
        #expect(
            hex == "0000003c" + "07" + "01"  // batch with a base (1.2), sequence 1
                + "01" + "0102030405060708090a0b0c0d0e0f10"  // node table: one node
                + "01" + "00" + "02"  // covers {#0: 2}
                + "01" + "00" + "01"  // base {#0: 1}
                + "01" + "02" + "7431" + "01"  // one run: item "t1", one field
                + "04" + "74616773"  // "tags"
                + "01"  // a delta
                + "01" + "00" + "02"  // context {#0: 2}
                + "00"  // horizon {}
                + "01" + "00" + "00" + "00"  // one version: #0, 0 below, same time
                + "01" + "01" + "05" + "0163" + "00"  // list write: added string "c", removed nothing
                + "00"  // no versions kept by dot
                + "01" + "05" + "0163" + "00" + "00" + "00" + "00"  // one tag: "c", #0, 0 below, same time, position 0
                + "00"  // no removals
        )
        #expect(try MessageCoder.decode(MessageCoder.encode(.batch(sequence: 1, batch))) == .batch(sequence: 1, batch))
    }

    /// A batch that names more nodes than its table searches in place (it then hashes them):
    /// the table lists the covers' nodes, then each update's, each in id order and once; runs of
    /// one item's updates are kept apart when another item comes between; and it round-trips.
    @Test func aBatchOfManyNodesAndRuns() throws {
        let nodes = (1...12).map { NodeID.node(UInt64($0)) }
        func state(_ writers: [NodeID], _ value: String) -> FieldState {
            var merged = FieldState()
            for (i, node) in writers.enumerated() {
                var one = FieldState()
                one.assign(
                    .string(value),
                    dot: Dot(node: node, counter: UInt64(i + 1)),
                    timestamp: HLCTimestamp(rawValue: 5)
                )
                merged.merge(one)
            }
            return merged
        }
        let keys = [("a", "x"), ("a", "y"), ("b", "x"), ("a", "z")]
        let writers = [Array(nodes[4...9].reversed()), [nodes[11]], [nodes[2], nodes[10]], [nodes[0]]]
        let updates = try zip(keys, writers).map { key, writers in
            FieldUpdate(
                key: FieldKey(item: try ItemID(key.0), field: try FieldName(key.1)),
                state: state(writers, key.1)
            )
        }
        // With a base (protocol 1.2), so that states travel with their removal logs and decode equal.
        let batch = DeltaBatch(
            updates: updates,
            covers: VersionVector([nodes[7]: 9, nodes[1]: 3]),
            base: VersionVector()
        )
        let bytes = Frame.encode(.batch(sequence: 7, batch))
        #expect(Frame.encode(.batch(sequence: 7, batch)) == bytes)
        var expected: [NodeID] = []
        for node in batch.covers.nodes + updates.flatMap(\.change.context.nodes) where !expected.contains(node) {
            expected.append(node)
        }
        // The frame's length (4), its type (1), the sequence (1), the table's length (1), then the ids.
        #expect(Int(bytes[6]) == expected.count)
        let table = (0..<expected.count).map { i in Array(bytes[(7 + 16 * i)..<(7 + 16 * (i + 1))]) }
        #expect(table == expected.map(\.bytes))
        #expect(try MessageCoder.decode(MessageCoder.encode(.batch(sequence: 7, batch))) == .batch(sequence: 7, batch))
    }

    @Test func messagesRoundTrip() throws {
        var rng = SplitMix64(seed: 5)
        var replica = Replica(nodeID: Self.a)
        for i in 0..<40 {
            let id = ItemID.named("i\(i % 7)")
            let edit: ItemEdit =
                replica.items[id] == nil
                ? .create(
                    type: "t",
                    assignments: [
                        .set(.named("v"), EdgeValues.random(using: &rng)),
                        .add(.named("tags"), rng.pick(EdgeValues.elements)),
                    ]
                )
                : .update([.set(.named("v"), EdgeValues.random(using: &rng))])
            _ = try? replica.apply(edit, to: id, wallMilliseconds: 1_700_000_000_000)
        }
        var messages: [Message] =
            [
                .hello(
                    Hello(
                        nodeID: Self.a,
                        clusterID: Self.c,
                        role: .relay,
                        name: "é",
                        versionVector: replica.versionVector
                    )
                ),
                .ack(sequence: .max), .done(versionVector: replica.versionVector),
                .summary(versionVector: VersionVector()), .expect(fieldStates: 123_456),
            ] + ProtocolError.Code.allCases.map { .error(ProtocolError($0, "why \($0)")) }
        // Protocol 1.2 batches: whole states with their removal logs, and deltas of the lists
        // changed since `middle`.
        let middle = replica.versionVector
        for i in 0..<30 {
            let id = ItemID.named("i\(i % 7)")
            guard replica.items[id]?.exists == true else { continue }
            let element = Value.integer(Int64(i % 5))
            _ = try? replica.apply(
                .update([i % 3 == 0 ? .remove(.named("tags"), element) : .add(.named("tags"), element)]),
                to: id,
                wallMilliseconds: 1_700_000_000_000
            )
        }
        var sequence: UInt64 = 0
        for batch in replica.delta(for: VersionVector(), maxUpdates: 7, deltaBase: VersionVector()) {
            sequence += 1
            messages.append(.batch(sequence: sequence, batch))
        }
        let deltas = replica.delta(for: middle, maxUpdates: 7, deltaBase: middle)
        #expect(deltas.contains { $0.updates.contains(where: \.change.isDelta) })
        for batch in deltas {
            sequence += 1
            messages.append(.batch(sequence: sequence, batch))
        }
        // Protocol 1.9: a last batch with its done, logged (field deltas) and plain.
        if let logged = deltas.last {
            messages.append(.finalBatch(sequence: sequence + 1, logged, done: middle))
        }
        if let plain = replica.delta(for: VersionVector(), maxUpdates: 7).last {
            let decoded = try MessageCoder.decode(
                MessageCoder.encode(.finalBatch(sequence: 9, plain, done: replica.versionVector))
            )
            guard case let .finalBatch(9, batch, done) = decoded else {
                Issue.record("not a final batch: \(decoded)")
                return
            }
            #expect(batch.base == nil && batch.covers == plain.covers && done == replica.versionVector)
            #expect(batch.updates.map(\.key) == plain.updates.map(\.key))
        }
        // Protocol 1.1 batches carry no removal log: a state arrives with its whole context as
        // horizon (it vouches for no removal), and otherwise unchanged.
        for batch in replica.delta(for: VersionVector(), maxUpdates: 7) {
            guard case .batch(_, let decoded) = try MessageCoder.decode(MessageCoder.encode(.batch(sequence: 1, batch)))
            else {
                Issue.record("not a batch")
                continue
            }
            #expect(decoded.base == nil && decoded.covers == batch.covers)
            #expect(decoded.updates.map(\.key) == batch.updates.map(\.key))
            for (sent, received) in zip(batch.updates, decoded.updates) {
                guard case .state(let a) = sent.change, case .state(let b) = received.change else {
                    Issue.record("a 1.1 batch carries whole states only")
                    continue
                }
                #expect(a.context == b.context && a.versions == b.versions && a.entries == b.entries)
                #expect(b.removals.isEmpty && b.horizon == b.context)
            }
        }
        // A relay's overrule travels too.
        var refused = FieldState()
        refused.assign(.string("too big"), dot: Dot(node: Self.c, counter: 7), timestamp: HLCTimestamp(rawValue: 7))
        var overruled = FieldState()
        overruled.overrule(
            refused,
            keeping: .null,
            reason: "over the limit",
            dot: Dot(node: Self.a, counter: 9),
            timestamp: HLCTimestamp(rawValue: 9)
        )
        messages.append(
            .batch(
                sequence: 99,
                DeltaBatch(
                    updates: [
                        FieldUpdate(key: FieldKey(item: try ItemID("x"), field: try FieldName("f")), state: overruled)
                    ],
                    covers: VersionVector([Self.a: 9]),
                    base: VersionVector()
                )
            )
        )
        messages.append(
            .hello(
                Hello(
                    nodeID: Self.a,
                    clusterID: Self.c,
                    role: .peer,
                    name: "r",
                    versionVector: VersionVector(),
                    statements: [[1, 2, 3], []]
                )
            )
        )
        messages.append(.joinRequest(JoinRequest(name: "garage", publicKey: Array(0..<91), proof: Array(100..<132))))
        messages.append(
            .joinAccepted(JoinAccepted(certificate: Array(repeating: 7, count: 500), authority: [1, 2, 3]))
        )
        messages.append(.error(ProtocolError(.joinRefused, "this invite expired")))
        for message in messages {
            let frame = Frame.encode(message)
            #expect(try Frame.payloadLength(prefix: Array(frame.prefix(4))) == frame.count - 4)
            #expect(try MessageCoder.decode(Array(frame.dropFirst(4))) == message)
        }
    }

    /// A join request must carry a 32-byte proof and a bounded key; the magic marks it as ours.
    @Test func malformedJoinRequestsAreRefused() {
        let good = MessageCoder.encode(.joinRequest(JoinRequest(name: "b", publicKey: [1, 2], proof: Array(0..<32))))
        #expect((try? MessageCoder.decode(good)) != nil)
        let shortProof = MessageCoder.encode(
            .joinRequest(JoinRequest(name: "b", publicKey: [1, 2], proof: [1, 2, 3]))
        )
        #expect(throws: WireError.self) { try MessageCoder.decode(shortProof) }
        let hugeKey = MessageCoder.encode(
            .joinRequest(JoinRequest(name: "b", publicKey: Array(repeating: 0, count: 5000), proof: Array(0..<32)))
        )
        #expect(throws: WireError.self) { try MessageCoder.decode(hugeKey) }
        var noMagic = good
        noMagic[1] = 0
        #expect(throws: WireError.self) { try MessageCoder.decode(noMagic) }
    }

    @Test func framesAreBounded() {
        #expect(throws: WireError.frameTooLarge(WireLimits.maxFrameBytes + 1)) {
            try Frame.payloadLength(prefix: [0x01, 0x00, 0x00, 0x01])
        }
        #expect(throws: WireError.malformed("empty frame")) { try Frame.payloadLength(prefix: [0, 0, 0, 0]) }
    }

    @Test func decodingIsTotal() throws {
        var rng = SplitMix64(seed: 11)
        let samples = [
            MessageCoder.encode(
                .hello(
                    Hello(
                        nodeID: Self.a,
                        clusterID: Self.c,
                        role: .peer,
                        name: "n",
                        versionVector: VersionVector([Self.a: 9])
                    )
                )
            ),
            MessageCoder.encode(.ack(sequence: 77)),
        ]
        for _ in 0..<20_000 {
            var bytes = rng.pick(samples)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            default:
                bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            _ = try? MessageCoder.decode(bytes)  // must return or throw, never crash
        }
        #expect(throws: WireError.unknownMessageType(99)) { try MessageCoder.decode([99]) }
        // A batch claiming 4 billion updates.
        #expect(throws: WireError.self) { try MessageCoder.decode([2, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]) }
    }

    /// Every input the fuzzer ever found interesting or crashing is kept in Regressions/ and must
    /// decode or be refused without crashing.
    @Test func fuzzRegressions() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Regressions")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            !$0.hasPrefix(".") && $0 != "README.md"
        }
        print("fuzz regressions: \(files.count) inputs")
        for file in files {
            let bytes = try Array(Data(contentsOf: dir.appendingPathComponent(file)))
            if let message = try? MessageCoder.decode(bytes) {
                #expect(try MessageCoder.decode(MessageCoder.encode(message)) == message, "\(file)")
            }
        }
    }
}
