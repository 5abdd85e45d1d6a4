import LansyncReplica

/// How the integration tests wait: on an event (a log line, a status field, a file, an answer),
/// looked for again and again, with one generous bound on a hang. Never on a fixed time: a
/// loaded machine makes any fixed time too short somewhere (nineteen of one round's commits
/// mended CI failures that were timing), and a generous one makes every run slow.
///
/// The bound is not a timing to assert: a test checks what it waited for, and says what it saw
/// when the wait gave up.

/// Waits until `condition` holds, looking every `every` for up to `within`, and looks once more
/// at the end (on a loaded machine this task may not run again until past the deadline: the
/// full suite once failed a log line written 6 s after the look before, well within the bound).
/// Returns whether it held.
func eventually(
    within bound: Duration = .seconds(60),
    every interval: Duration = .milliseconds(100),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    try await eventually(within: bound, every: interval) { try await condition() ? true : nil } ?? false
}

/// Waits until `produce` returns a value, looking every `every` for up to `within`, and once
/// more at the end; the value, or nil once the bound passed.
func eventually<T>(
    within bound: Duration = .seconds(60),
    every interval: Duration = .milliseconds(100),
    _ produce: () async throws -> T?
) async rethrows -> T? {
    let clock = ContinuousClock()
    let deadline = clock.now + bound
    while clock.now < deadline {
        if let value = try await produce() { return value }
        // The one sleep of a wait: between two looks at the event. Cancelled, the wait looks
        // once more and ends.
        try? await Task.sleep(for: interval)
        if Task.isCancelled { break }
    }
    return try await produce()
}

/// Returns once the wall clock has passed the millisecond it shows now, so that an edit made
/// after is stamped later than one made before (edits are stamped in wall-clock milliseconds): a
/// test whose second edit must be the later one calls this between them. Nearly always at once.
func waitForTheNextMillisecond() async {
    let now = WallClock.milliseconds
    _ = await eventually(every: .milliseconds(1)) { WallClock.milliseconds > now }
}
