import Foundation
import LansyncIdentity
import LansyncNode
import LansyncTestSupport

/// The fuzzer of the receive path (issue 62; Fuzz/README.md): recorded sessions of a real
/// member, mutated, played into a real node one after another, its status read after each.
/// A trap (the process dies) is the finding: the session that caused it is in ``current`` when
/// it happens (written before it is played), so that it can be kept and replayed.
///
/// The corpus starts from the recorded sessions and keeps each mutated session whose ending is
/// one not seen before (the error the node closed with, whether it applied anything): coarse
/// feedback, with no instrumentation, so that a release build runs it.
public struct ReceivePathFuzzer {
    public struct Report: Sendable, CustomStringConvertible {
        public var executions = 0
        public var corpus = 0
        public var seeds = 0
        /// Distinct endings seen (a session refused for each reason, or taken).
        public var endings = 0
        public var targets = 0
        /// Sessions in which the node took field states (a batch applied).
        public var applied = 0
        public var seconds = 0.0
        public var description: String {
            String(
                format:
                    "%d sessions in %.0f s (%.0f/s), %d applied field states, corpus %d (%d recorded), %d distinct endings, %d fresh nodes",
                executions,
                seconds,
                Double(executions) / max(seconds, 0.001),
                applied,
                corpus,
                seeds,
                endings,
                targets
            )
        }
    }

    let directory: String
    let cluster: ClusterSecret
    var mutator: SessionMutator
    var rng: SplitMix64
    /// Where the session about to be played is written (nil: nowhere).
    public let current: String?
    /// A fresh node every this many sessions, so its replica stays small and each session's
    /// effect depends on few others (a crash replays from a fresh node).
    public var sessionsPerTarget = 300

    public init(directory: String, seed: UInt64, current: String? = nil) throws {
        self.directory = directory
        cluster = try ClusterSecret.generate()
        mutator = SessionMutator(seed: seed)
        rng = SplitMix64(seed: seed ^ 0x5EED)
        self.current = current
    }

    /// Records the seed sessions, then fuzzes for `duration` (counted from then), and past it
    /// until at least `minimum` sessions were played (at most five times `duration` in all: a
    /// test process whose threads other tests hold plays slowly); never more than `executions`.
    /// `extra` are sessions to add to the corpus (a kept corpus, crash inputs to replay first).
    public mutating func run(
        for duration: Duration,
        minimum: Int = 0,
        executions limit: Int = .max,
        extra: [[UInt8]] = [],
        progress: (Report) -> Void = { _ in }
    ) async throws -> (report: Report, corpus: [[UInt8]]) {
        let clock = ContinuousClock()
        let member = try InProcessNode(directory: directory + "/member", cluster: cluster, name: "member")
        var corpus = try await SessionRecorder.record(in: directory + "/recorded", cluster: cluster, member: member)
        corpus += corpus.prefix(1).compactMap(SessionMutator.withExtremeHello)
        corpus += corpus.compactMap(SessionMutator.withExtremeCertificates).prefix(1)
        let started = clock.now
        var report = Report()
        report.seeds = corpus.count
        corpus += extra
        var endings = Set<String>()
        var target = try FuzzTarget(directory: directory + "/target-0", cluster: cluster, peer: member.id)
        report.targets = 1
        // The recorded and given sessions first, as they are.
        var queue = corpus
        var lastProgress = clock.now
        func goOn() -> Bool {
            let spent = clock.now - started
            guard report.executions < limit, spent < duration * 5 else { return false }
            return spent < duration || report.executions < minimum
        }
        while goOn() {
            let input: [UInt8]
            if let next = queue.popLast() {
                input = next
            } else {
                input = mutator.mutate(rng.pick(corpus), splicing: rng.pick(corpus))
            }
            if let current { _ = FileManager.default.createFile(atPath: current, contents: Data(input)) }
            let outcome = await target.run(input)
            report.executions += 1
            if outcome.counters.receivedUpdates > 0 { report.applied += 1 }
            let ending = Self.ending(outcome)
            if endings.insert(ending).inserted, corpus.count < 4096 { corpus.append(input) }
            if report.executions % sessionsPerTarget == 0 {
                await target.node.shutdownPools()
                try? FileManager.default.removeItem(atPath: directory + "/target-\(report.targets - 1)")
                target = try FuzzTarget(
                    directory: directory + "/target-\(report.targets)",
                    cluster: cluster,
                    peer: member.id
                )
                report.targets += 1
            }
            if clock.now - lastProgress > .seconds(30) {
                lastProgress = clock.now
                report.corpus = corpus.count
                report.endings = endings.count
                report.seconds = Self.seconds(clock.now - started)
                progress(report)
            }
        }
        await target.node.shutdownPools()
        await member.node.shutdownPools()
        report.corpus = corpus.count
        report.endings = endings.count
        report.seconds = Self.seconds(clock.now - started)
        return (report, corpus)
    }

    /// How a session ended, coarsely: which error closed it (its code and the start of its
    /// words, numbers left out), and whether it moved anything.
    static func ending(_ outcome: SessionOutcome) -> String {
        let words = (outcome.failure ?? "-").prefix(48).filter { !$0.isNumber }
        return "\(words) \(outcome.counters.receivedUpdates > 0) \(outcome.reachedUpToDate)"
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
