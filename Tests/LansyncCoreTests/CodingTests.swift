import LansyncCore
import LansyncJSON
import LansyncTestLane
import LansyncTestSupport
import PropertyBased
import Testing

/// The binary and JSON encodings round-trip exactly, and their decoders are total.
@Suite(.computeBound) struct CodingTests {
    /// Every field state of a random history survives encode → decode unchanged, and every
    /// truncation or single-byte corruption of its encoding is either refused or decodes to a
    /// well-formed state (never a crash).
    @Test func fieldStatesRoundTripAndDecodingIsTotal() async {
        await propertyCheck(
            count: propertyCases(default: 150),
            input: Gen.uint64(in: 0 ... .max),
            Gen.int(in: 2...5),
            Gen.int(in: 5...40)
        ) { seed, replicas, steps in
            var history = History(seed: seed, replicaCount: replicas)
            for _ in 0..<steps { history.step() }
            var rng = SplitMix64(seed: seed)
            for replica in history.replicas {
                for item in replica.items.values {
                    for state in item.fields.values {
                        let bytes = state.encoded
                        let decoded = try? FieldState(decoding: bytes)
                        #expect(decoded == state, "seed \(seed)")
                        guard bytes.count < 4096 else { continue }
                        let cut = Int.random(in: 0..<bytes.count, using: &rng)
                        #expect(throws: DecodingError.self) { try FieldState(decoding: Array(bytes.prefix(cut))) }
                        var corrupt = bytes
                        corrupt[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                        // A corrupted buffer that still decodes must give a well-formed state,
                        // which round-trips like any other.
                        if let decoded = try? FieldState(decoding: corrupt) {
                            let again = try? FieldState(decoding: decoded.encoded)
                            #expect(again == decoded, "seed \(seed)")
                        }
                    }
                }
            }
        }
    }

    @Test func randomBytesNeverCrashTheDecoders() {
        var rng = SplitMix64(seed: 77)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? FieldState(decoding: bytes)
            var r = ByteReader(bytes)
            _ = try? r.versionVector()
            _ = try? JSON(parsing: String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func lyingLengthsAreRefusedWithoutAllocating() {
        var w = ByteWriter()
        w.byte(6)  // a list...
        w.varint(UInt64(Int64.max))  // ...claiming 2^63 elements
        var r = ByteReader(w.bytes)
        #expect(throws: DecodingError.self) { try r.value() }
        var deep = [UInt8](repeating: 6, count: 40)  // lists nested 40 deep, each of one element
        deep = deep.flatMap { [$0, 1] } + [0]
        var r2 = ByteReader(deep)
        #expect(throws: DecodingError.self) { try r2.value() }
    }

    @Test func jsonRoundTripsEveryEdgeValue() throws {
        // JSON writes every NaN as `NaN`, so a NaN's sign and payload do not survive JSON (the
        // binary encoding keeps them); all other values round-trip bit for bit.
        let jsonExact = (EdgeValues.scalars + EdgeValues.elements).filter { $0 != .double(-.nan) }
        for value in jsonExact + [.list(jsonExact), .string(EdgeValues.megabyteString)] {
            let text = value.jsonText
            #expect(try JSON(parsing: text).value == value, "\(text.prefix(80))")
        }
        #expect(Value.double(1.0).jsonText == "1.0")
        #expect(Value.double(-0.0).jsonText == "-0.0")
        #expect(Value.integer(1).jsonText == "1")
        #expect(Value.string("a\"b\\c\n\u{1}").jsonText == #""a\"b\\c\n\u0001""#)
    }

    @Test func jsonParsesWhatUsersType() throws {
        #expect(try JSON(parsing: " 42 ").value == .integer(42))
        #expect(try JSON(parsing: "-9223372036854775808").value == .integer(.min))
        // Out of range is refused, not rounded to a double or to Infinity (issue 12).
        for outOfRange in [
            "9223372036854775808", "-9223372036854775809", "1e999", "-1e400", "[1, 99999999999999999999]",
        ] {
            #expect(throws: JSONError.self, "\(outOfRange)") { try JSON(parsing: outOfRange) }
        }
        #expect(try JSON(parsing: "9223372036854775808.0").value == .double(9223372036854775808.0))
        #expect(
            try JSON(parsing: "[1, \"two\", [3.5], null]").value
                == .list([.integer(1), .string("two"), .list([.double(3.5)]), .null])
        )
        #expect(try JSON(parsing: #""\ud83d\ude00""#).value == .string("😀"))
        #expect(try JSON(parsing: #"{"a": 1}"#).value == nil)
        // The one object that is a value: a link, to a valid item id.
        #expect(try JSON(parsing: #"{"ref": "t-1"}"#).value == .ref(ItemID(unchecked: "t-1")))
        #expect(try JSON(parsing: #"[{"ref": "t-1"}]"#).value == .list([.ref(ItemID(unchecked: "t-1"))]))
        for notALink in [#"{"ref": 1}"#, #"{"ref": "a b"}"#, #"{"ref": "x", "b": 1}"#] {
            #expect(try JSON(parsing: notALink).value == nil, "\(notALink)")
        }
        #expect(Value.ref(ItemID(unchecked: "t-1")).jsonText == #"{"ref":"t-1"}"#)
        #expect(try JSON(parsing: #"{"a": 1, "b": [true]}"#)["b"] == .array([.bool(true)]))
        for bad in [
            "", "tru", "01", "1.", "[1,]", "\"abc", #""\ud800""#, "[1] x", "{1:2}", String(repeating: "[", count: 100),
        ] {
            #expect(throws: JSONError.self, "\(bad.prefix(20))") { try JSON(parsing: bad) }
        }
    }
}
