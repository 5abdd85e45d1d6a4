import Testing

@testable import LansyncNode

/// The log-line budget that keeps strangers from filling the log.
@Suite struct LineBudgetTests {
    @Test func aMinutesBudgetEndsWithOneLineThatSaysSoThenRefills() {
        let budget = LineBudget(perMinute: 3)
        let minute: UInt64 = 60_000
        #expect(budget.take(now: 10 * minute) == .log)
        #expect(budget.take(now: 10 * minute + 5) == .log)
        #expect(budget.take(now: 10 * minute + 9) == .lastThisMinute)
        for i in 0..<100 { #expect(budget.take(now: 10 * minute + 10 + UInt64(i)) == .drop) }
        #expect(budget.take(now: 11 * minute) == .log, "a new minute, a new budget")
    }
}
