import Foundation
import LansyncFuzzing
import LansyncTestSupport
import Testing

/// Issue 62: the fuzzer of the receive path, a short run on every test run. Recorded sessions of
/// a real member, mutated, played into a real node in process (decode, session machine, the
/// node's judgement of the hello, the store's receive, status). The test fails by the process
/// dying: the session that killed it is in the file printed first. `LANSYNC_FUZZ_SECONDS` sets
/// the length (60 by default), `LANSYNC_FUZZ_SEED` the seed (62 by default, printed);
/// Fuzz/README.md says how to run it for hours.
@Suite struct ReceivePathFuzzTests {
    @Test func mutatedSessionsCrashNoNode() async throws {
        let dir = makeTemporaryDirectory("fuzz")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let seconds = getenvString("LANSYNC_FUZZ_SECONDS").flatMap(Double.init) ?? 60
        // A fixed seed unless one is given: a test run fails only for the code it tests (the
        // sessions also depend on the order the node's tasks ran in; the long runs take random
        // seeds, `lansync-debug fuzz-sessions`).
        let seed = getenvString("LANSYNC_FUZZ_SEED").flatMap { UInt64($0) } ?? 62
        let current = dir + "/current.bin"
        print("receive-path fuzzer: seed \(seed); the session being played is kept in \(current)")
        var fuzzer = try ReceivePathFuzzer(directory: dir + "/nodes", seed: seed, current: current)
        // At least 300 sessions, however slowly a loaded test process plays them.
        let (report, corpus) = try await fuzzer.run(for: .seconds(seconds), minimum: 300)
        print("receive-path fuzzer: \(report)")
        // The recorded sessions are real: each is a whole hello and some batches, and the node
        // took them (a corpus of sessions refused at the hello would fuzz nothing past it).
        #expect(report.seeds >= 4 && report.executions > report.seeds && report.applied >= report.seeds, "\(report)")
        #expect(report.endings >= 3, "mutations reach more than one ending: \(report)")
        #expect(corpus.count >= report.seeds)
    }
}
