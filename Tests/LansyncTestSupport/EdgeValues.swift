public import LansyncCore

/// Values that break naive code: empty and 1 MB strings, canonically-equivalent but different
/// Unicode, NUL, emoji, integer extremes, signed zeros, subnormals, NaN, infinities, nested lists.
public enum EdgeValues {
    public static let megabyteString = String(repeating: "λ", count: 500_000)  // 1,000,000 UTF-8 bytes

    public static let scalars: [Value] = [
        .null, .bool(false), .bool(true),
        .integer(0), .integer(1), .integer(-1), .integer(.min), .integer(.max),
        .double(0.0), .double(-0.0), .double(1.5), .double(.leastNonzeroMagnitude),
        .double(-.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .double(.infinity),
        .double(-.infinity), .double(.nan), .double(-.nan),
        .string(""), .string("a"), .string("é"), .string("e\u{301}"), .string("\u{0}"),
        .string("👩‍👩‍👧"), .string("\u{202E}rtl"), .string("\u{FEFF}bom"), .string("line\nbreak"),
        .ref(ItemID(unchecked: "i1")), .ref(ItemID(unchecked: "01a216a6-18ce-70f1-b2a2-293b2b7e97f4")),
    ]

    public static let elements: [Value] = [
        .string("climbing"), .string("reading"), .string("karaoke"), .string("é"), .string("e\u{301}"),
        .integer(1), .double(1.0), .double(-0.0), .double(0.0), .null, .list([.integer(1)]),
        .ref(ItemID(unchecked: "i2")),
    ]

    public static func random(using rng: inout SplitMix64) -> Value {
        if rng.chance(1) { return .string(megabyteString) }
        if rng.chance(8) { return .list((0..<Int.random(in: 0...3, using: &rng)).map { _ in rng.pick(elements) }) }
        if rng.chance(10) { return .integer(Int64.random(in: .min ... .max, using: &rng)) }
        if rng.chance(5) { return .double(Double(bitPattern: rng.next())) }
        return rng.pick(scalars)
    }
}
