public import LansyncCore

/// About how many members a cluster has, in 64 bytes: a HyperLogLog sketch (Flajolet, Fusy,
/// Gandouet and Meunier 2007) of the member ids a node has heard of, merged from every hello
/// (protocol 1.11). What a node holds of its members is bounded on purpose (a member table of those
/// it met, a passive view of 30), so none knows a large cluster's size; merged sketches do,
/// within about 13%, without naming anyone: what sets how far a change floods near its origin
/// (Docs/SCALE.md, "Near the origin").
///
/// Merging takes each register's maximum, so a sketch never shrinks: a member that left is
/// counted until every node has restarted (sketches live in memory only). A peer's made-up
/// registers can only make the count larger, which costs copies of changes, never data; each
/// register is checked against the most a 64-bit hash can give.
public struct MemberSketch: Hashable, Sendable {
    public static let registerCount = 64
    /// The largest rank a register can hold: 58 bits left after the index, plus one.
    public static let maxRank: UInt8 = 59

    public private(set) var registers: [UInt8]

    public init() {
        registers = Array(repeating: 0, count: Self.registerCount)
    }

    /// A sketch read from the wire: nil if it has the wrong length or a register past ``maxRank``.
    public init?(registers: [UInt8]) {
        guard registers.count == Self.registerCount, registers.allSatisfy({ $0 <= Self.maxRank }) else { return nil }
        self.registers = registers
    }

    /// Counts `member` (again is the same).
    public mutating func insert(_ member: NodeID) {
        let hash = Self.mix(member.high ^ Self.mix(member.low))
        let index = Int(hash >> 58)
        let rank = UInt8(min(Int(Self.maxRank), (hash << 6).leadingZeroBitCount + 1))
        registers[index] = max(registers[index], rank)
    }

    /// Takes in what another node counted.
    public mutating func merge(_ other: MemberSketch) {
        for i in registers.indices { registers[i] = max(registers[i], other.registers[i]) }
    }

    /// The largest estimate given: far past any cluster lansync serves (Docs/SCALE.md), and a
    /// bound on what made-up registers can claim. All 64 registers at ``maxRank`` would
    /// otherwise estimate about 2.6e19, past `Int` (a remote crash before issue 62).
    public static let maxEstimate = 1 << 24

    /// About how many distinct members were counted, at most ``maxEstimate``.
    public var estimate: Int {
        let m = Double(Self.registerCount)
        let zeros = registers.filter { $0 == 0 }.count
        let sum = registers.reduce(0.0) { $0 + 1 / Double(UInt64(1) << UInt64($1)) }
        let raw = 0.709 * m * m / sum
        // Few members: count the empty registers instead (linear counting), as the paper does.
        if raw <= 2.5 * m, zeros > 0 {
            return min(Self.maxEstimate, Int(saturating: (m * Self.log(m / Double(zeros))).rounded()))
        }
        return min(Self.maxEstimate, Int(saturating: raw.rounded()))
    }

    /// SplitMix64's finalizer: spreads node ids (often small numbers in tests) over 64 bits.
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The natural logarithm, for x ≥ 1, without Foundation (this module has none).
    static func log(_ x: Double) -> Double {
        // ln x = 2 atanh((x - 1) / (x + 1)), a series that converges for every x > 0.
        let y = (x - 1) / (x + 1)
        var term = y
        var sum = 0.0
        var n = 1.0
        while abs(term / n) > 1e-12 {
            sum += term / n
            term *= y * y
            n += 2
        }
        return 2 * sum
    }
}
