public import LansyncCore

/// A tiny seeded generator: a history is a pure function of its seed, so any failure replays.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }

    public mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &self)] }
}

/// How many random cases a property test runs: a quick default for CI, more with
/// `LANSYNC_PROPERTY_CASES=N swift test`.
public func propertyCases(default value: Int) -> Int {
    if let text = getenvString("LANSYNC_PROPERTY_CASES"), let n = Int(text), n > 0 { return n }
    return value
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public func getenvString(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    return String(cString: raw)
}

extension NodeID {
    /// A readable test node id: node(1), node(2)...
    public static func node(_ n: UInt64) -> NodeID { NodeID(high: n &* 0x9E37_79B9_7F4A_7C15, low: n) }
}

extension FieldName {
    public static func named(_ s: String) -> FieldName { try! FieldName(s) }
}

extension ItemID {
    public static func named(_ s: String) -> ItemID { try! ItemID(s) }
}
