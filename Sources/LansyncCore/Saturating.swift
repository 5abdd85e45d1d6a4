/// Conversions that cannot trap, for numbers that came from elsewhere.
///
/// In Swift `Int(x)` of a `Double` past `Int`'s range, infinite or NaN stops the process, and so
/// does an `Int` sum or product that overflows: where a peer chose the number, that is a remote
/// crash (DESIGN invariant 14). Every figure derived from what a peer sent (an estimate, a rate,
/// a time left) converts through here after its inputs were bounded where they arrived.
extension Int {
    /// `value` rounded toward zero and held within `Int`'s range; NaN is 0.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }

    /// `self + other`, or the nearer bound of `Int` where it would overflow.
    public func addingSaturated(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self * other`, or the bound of `Int` on the product's side where it would overflow.
    public func multipliedSaturated(by other: Int) -> Int {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : product
    }
}
