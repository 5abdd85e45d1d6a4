import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

@Suite struct ValueTests {
    @Test func equalityIsByteExact() {
        #expect(Value.string("é") != Value.string("e\u{301}"))  // Swift's String == says equal
        #expect(Set([Value.string("é"), .string("e\u{301}")]).count == 2)
        #expect(Value.double(0.0) != Value.double(-0.0))
        #expect(Value.double(.nan) == Value.double(.nan))
        #expect(Value.integer(1) != Value.double(1.0))
        #expect(Value.list([.integer(1)]) == Value.list([.integer(1)]))
    }

    @Test func orderIsTotalOverEdgeValues() {
        let values = EdgeValues.scalars + EdgeValues.elements
        for a in values {
            #expect(!(a < a), "irreflexive: \(a)")
            for b in values where a != b {
                #expect((a < b) != (b < a), "exactly one of \(a) < \(b), \(b) < \(a)")
            }
        }
        #expect(Value.double(-0.0) < Value.double(0.0))
        #expect(Value.double(.infinity) < Value.double(.nan))
        #expect(Value.null < Value.bool(false) && Value.bool(true) < Value.integer(.min))
    }

    @Test func doublesKeepTheirBits() {
        for d in [0.0, -0.0, .leastNonzeroMagnitude, .nan, -.infinity, 0.1] {
            if case .double(let back) = Value.double(d) { #expect(back.bitPattern == d.bitPattern) }
        }
    }

    @Test func nodeIDTextRoundTrips() {
        for id in [NodeID(high: 0, low: 0), NodeID(high: .max, low: .max), NodeID.node(7)] {
            #expect(id.text.count == 26)
            #expect(NodeID(text: id.text) == id)
            #expect(NodeID(bytes: id.bytes) == id)
        }
        #expect(NodeID(text: "not an id") == nil)
        #expect(NodeID(text: "aaaaaaaaaaaaaaaaaaaaaaaaab") == nil)  // non-zero trailing bits
        #expect(NodeID(text: "Aaaaaaaaaaaaaaaaaaaaaaaaaa") == nil)  // upper case is not the form
        #expect(NodeID(text: "aaaaaaaaaaaaaaaaaaaaaaaaa8") == nil)
        #expect(NodeID(text: "aaaaaaaaaaaaaaaaaaaaaaaaaaa") == nil)
        #expect(NodeID(text: "aaaaaaaaaaaaaaaaaaaaaaaaé") == nil)  // 26 bytes, 25 characters
    }

    /// The text form is RFC 4648 base32, lower case, unpadded, as every earlier release wrote it
    /// (replicas, certificates and logs hold it): the expected texts are Python's
    /// `base64.b32encode` of the 16 big-endian bytes.
    @Test func nodeIDTextIsStableBase32() {
        let known: [(NodeID, String)] = [
            (NodeID(high: 0, low: 0), "aaaaaaaaaaaaaaaaaaaaaaaaaa"),
            (NodeID(high: .max, low: .max), "77777777777777777777777774"),
            (NodeID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210), "aerukz4jvpg677w4xkmhmvbsca"),
            (NodeID(high: 1, low: 2), "aaaaaaaaaaaacaaaaaaaaaaaai"),
        ]
        for (id, text) in known {
            #expect(id.text == text)
            #expect(NodeID(text: text) == id)
        }
    }

    @Test func uuidV7HasVersionVariantAndTimeOrder() throws {
        var rng = SplitMix64(seed: 9)
        let early = ItemID.uuidV7(milliseconds: 1_700_000_000_000, using: &rng)
        let late = ItemID.uuidV7(milliseconds: 1_700_000_000_001, using: &rng)
        let chars = Array(early.rawValue)
        #expect(chars.count == 36 && chars[14] == "7" && "89ab".contains(chars[19]))
        #expect(early < late)
        #expect(try ItemID(early.rawValue) == early)
    }

    @Test func namesAreValidated() {
        #expect(throws: EditError.self) { try FieldName("_type") }
        #expect(throws: EditError.self) { try FieldName("") }
        #expect(throws: EditError.self) { try FieldName("a=b") }
        #expect(throws: EditError.self) { try FieldName("tags-") }
        #expect(throws: Never.self) { try FieldName("due-date") }
        #expect(throws: EditError.self) { try ItemID("has space") }
        #expect(throws: EditError.self) { try ItemID(String(repeating: "x", count: 129)) }
        #expect(throws: Never.self) { try FieldName("prénom") }
    }
}

@Suite struct VersionVectorTests {
    let a = NodeID.node(1), b = NodeID.node(2)

    @Test func compares() {
        let v1 = VersionVector([a: 1, b: 2])
        #expect(v1.compare(to: v1) == .equal)
        #expect(VersionVector([a: 2, b: 2]).compare(to: v1) == .dominates)
        #expect(VersionVector([a: 1]).compare(to: v1) == .dominatedBy)
        #expect(VersionVector([a: 2]).compare(to: v1) == .concurrent)
        #expect(VersionVector().compare(to: VersionVector([a: 0])) == .equal)
    }

    @Test func joinsAndContains() {
        let joined = VersionVector([a: 3]).joined(with: VersionVector([a: 1, b: 5]))
        #expect(joined == VersionVector([a: 3, b: 5]))
        #expect(joined.contains(Dot(node: b, counter: 5)) && !joined.contains(Dot(node: b, counter: 6)))
    }
}

@Suite struct ClockTests {
    @Test func monotonicWhenTheWallClockGoesBack() {
        var clock = HybridLogicalClock()
        var last = HLCTimestamp.zero
        for wall: UInt64 in [1000, 2000, 500, 500, 1999, 2000, 3000] {
            let t = clock.tick(wallMilliseconds: wall)
            #expect(t > last)
            last = t
        }
    }

    @Test func observedTimestampsPullForwardButAreBounded() {
        var clock = HybridLogicalClock()
        clock.observe(HLCTimestamp(milliseconds: 5000, logical: 3), wallMilliseconds: 1000)
        #expect(clock.tick(wallMilliseconds: 1000) > HLCTimestamp(milliseconds: 5000, logical: 3))
        var other = HybridLogicalClock()
        other.observe(HLCTimestamp(milliseconds: 1 << 47, logical: 0), wallMilliseconds: 1000)
        #expect(other.latest.milliseconds <= 1000 + HybridLogicalClock.maxForwardDrift)
    }

    /// A clock once set two years ahead (a replica's saved clock) does not keep this replica's
    /// writes two years ahead once the wall clock is right again; within the drift it stays
    /// monotonic.
    @Test func aClockOnceYearsAheadComesBack() {
        let now: UInt64 = 1_800_000_000_000
        let twoYears: UInt64 = 2 * 365 * 86_400_000
        var clock = HybridLogicalClock(latest: HLCTimestamp(milliseconds: now + twoYears, logical: 7))
        let t = clock.tick(wallMilliseconds: now)
        #expect(t.milliseconds == now)
        #expect(clock.tick(wallMilliseconds: now) > t)
        var near = HybridLogicalClock(latest: HLCTimestamp(milliseconds: now + 60_000, logical: 0))
        #expect(near.tick(wallMilliseconds: now) > HLCTimestamp(milliseconds: now + 60_000, logical: 0))
    }
}
