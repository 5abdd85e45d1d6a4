import LansyncCore

/// A tiny seeded generator: a history is a pure function of its seed, so any failure replays.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }

    mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &self)] }
}

/// How many random cases a property test runs: a quick default for CI, more with
/// `LANSYNC_PROPERTY_CASES=N swift test`.
func propertyCases(default value: Int) -> Int {
    if let text = getenvString("LANSYNC_PROPERTY_CASES"), let n = Int(text), n > 0 { return n }
    return value
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func getenvString(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    return String(cString: raw)
}

extension NodeID {
    /// A readable test node id: node(1), node(2)...
    static func node(_ n: UInt64) -> NodeID { NodeID(high: n &* 0x9E37_79B9_7F4A_7C15, low: n) }
}

extension FieldName {
    static func named(_ s: String) -> FieldName { try! FieldName(s) }
}

extension ItemID {
    static func named(_ s: String) -> ItemID { try! ItemID(s) }
}
