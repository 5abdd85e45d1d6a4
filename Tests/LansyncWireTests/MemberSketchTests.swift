import LansyncCore
import LansyncTestSupport
import LansyncWire
import Testing

/// The count of members a hello carries (protocol 1.11): close enough to size the flood, merged
/// by maximum, never shrunk, bounded when read.
@Suite struct MemberSketchTests {
    @Test(arguments: [1, 8, 50, 100, 200, 1000, 5000])
    func countsWithinAFifth(_ members: Int) {
        var sketch = MemberSketch()
        for i in 0..<members { sketch.insert(.node(UInt64(i + 1))) }
        let error = abs(Double(sketch.estimate - members)) / Double(members)
        #expect(error <= 0.2, "\(members) members counted \(sketch.estimate)")
    }

    @Test func mergingCountsTheUnionAndCountingAgainChangesNothing() {
        var a = MemberSketch()
        var b = MemberSketch()
        for i in 0..<300 { a.insert(.node(UInt64(i + 1))) }
        for i in 200..<600 { b.insert(.node(UInt64(i + 1))) }
        let before = a
        a.insert(.node(1))
        #expect(a == before, "a member counted twice counts once")
        a.merge(b)
        #expect(abs(Double(a.estimate - 600)) / 600 <= 0.2, "the union: \(a.estimate)")
        var c = a
        c.merge(MemberSketch())
        #expect(c == a, "an empty sketch takes nothing away")
    }

    @Test func aSketchFromThePeerIsBounded() throws {
        #expect(MemberSketch(registers: Array(repeating: 59, count: 64)) != nil)
        #expect(MemberSketch(registers: Array(repeating: 60, count: 64)) == nil)
        #expect(MemberSketch(registers: Array(repeating: 0, count: 63)) == nil)
        var hello = Hello(nodeID: .node(1), clusterID: .node(9), role: .peer, name: "n", versionVector: VersionVector())
        var sketch = MemberSketch()
        for i in 0..<40 { sketch.insert(.node(UInt64(i))) }
        hello.members = sketch
        guard case .hello(let decoded) = try MessageCoder.decode(MessageCoder.encode(.hello(hello))) else {
            Issue.record("not a hello")
            return
        }
        #expect(decoded.members == sketch)
        var bytes = MessageCoder.encode(.hello(hello))
        // The last register (the staleness varint of 1.12 and the signed reports' count of 1.13
        // follow it).
        bytes[bytes.count - 3] = 60
        #expect(throws: WireError.self) { try MessageCoder.decode(bytes) }
    }
}
