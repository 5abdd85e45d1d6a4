/// A conversion that cannot trap, for numbers that came from elsewhere.
///
/// In Swift `Int(x)` of a `Double` past `Int`'s range, infinite or NaN stops the process, and so
/// an `Int` sum or product that overflows: where a peer chose the number, that is a remote
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
}
