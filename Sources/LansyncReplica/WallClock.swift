import Foundation

/// The wall clock: read only at the edges (the CLI, the host layer, the node) and passed into the
/// merge core and the store as milliseconds since 1970, so everything below stays testable.
public enum WallClock {
    /// Milliseconds since 1970 now (0 for a clock set before 1970).
    public static var milliseconds: UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000 + testSkew))
    }

    /// `LANSYNC_TEST_CLOCK_SKEW_MS`: shifts this process's clock, so that tests can run a machine
    /// whose clock is wrong (`lansync doctor` must say so). Not for anything else.
    static let testSkew: Double =
        ProcessInfo.processInfo.environment["LANSYNC_TEST_CLOCK_SKEW_MS"].flatMap(Double.init) ?? 0

    /// How lansync shows a moment: ISO 8601 in UTC with milliseconds (`2026-11-22T20:10:03.120Z`).
    /// Times past the year 9999 (a signed statement's stamp can say anything) show as its last
    /// millisecond: a formatter asked for a date far beyond may fail, and fail by trapping.
    public static func iso8601(milliseconds: UInt64) -> String {
        // A formatter per call: ISO8601DateFormatter is not Sendable, and this is never hot.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let shown = min(milliseconds, lastShown)
        return formatter.string(from: Date(timeIntervalSince1970: Double(shown) / 1000))
    }

    /// 9999-12-31T23:59:59.999Z.
    static let lastShown: UInt64 = 253_402_300_799_999
}
