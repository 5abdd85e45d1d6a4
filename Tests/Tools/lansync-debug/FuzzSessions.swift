import ArgumentParser
import Foundation
import LansyncFuzzing

extension DebugCommand {
    /// The fuzzer of the receive path for hours (Fuzz/README.md): `ReceivePathFuzzer` for
    /// `--seconds`, in `--work` (its nodes' replicas), the session being played always in
    /// `--work/current.bin`. Prints its figures every 30 s and at the end; the corpus it grew is
    /// written to `--corpus` (and read from it at the start). A trap kills this process with the
    /// session that caused it in current.bin: `Fuzz/run-receive-path.sh` keeps it and goes on.
    struct FuzzSessions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "fuzz-sessions")
        @Option var seconds: Double = 60
        @Option var seed: UInt64 = UInt64.random(in: 0...UInt64.max)
        @Option var work: String
        @Option var corpus: String?

        func run() async throws {
            try? FileManager.default.removeItem(atPath: work + "/nodes")
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            var kept: [[UInt8]] = []
            if let corpus, let names = try? FileManager.default.contentsOfDirectory(atPath: corpus) {
                for name in names.sorted() {
                    if let data = FileManager.default.contents(atPath: corpus + "/" + name) { kept.append(Array(data)) }
                }
            }
            print("fuzz-sessions: seed \(seed), \(kept.count) kept sessions")
            var fuzzer = try ReceivePathFuzzer(directory: work + "/nodes", seed: seed, current: work + "/current.bin")
            let (report, grown) = try await fuzzer.run(for: .seconds(seconds), extra: kept) { report in
                FileHandle.standardOutput.write(Data("fuzz-sessions: \(report)\n".utf8))
            }
            if let corpus {
                try FileManager.default.createDirectory(atPath: corpus, withIntermediateDirectories: true)
                for (i, input) in grown.enumerated() {
                    _ = FileManager.default.createFile(atPath: corpus + "/\(i)", contents: Data(input))
                }
            }
            try? FileManager.default.removeItem(atPath: work + "/nodes")
            print("fuzz-sessions: done: \(report)")
        }
    }
}
