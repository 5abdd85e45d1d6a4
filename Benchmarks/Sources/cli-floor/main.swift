// The floor under a lansync command's start (Docs/BENCHMARKS.md, "Where issue 31's targets
// stand"): a static Swift binary with Foundation and swift-argument-parser, as `lansync` is
// built, that parses `get ID [--dir DIR] [--json]` as `lansync get` does and then asks the file
// system one question. Nothing of lansync's: what it costs is what any command of a binary made
// this way pays before it does its work.
//
//   swift build -c release --static-swift-stdlib --package-path Benchmarks --product cli-floor
//   perf stat -r 40 Benchmarks/.build/release/cli-floor get x
import ArgumentParser
import Foundation

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Say whether /tmp/ID exists.")
    @Option(help: "Unused: parsed as lansync's --dir is.") var dir: String?
    @Argument(help: "A name under /tmp.") var id: String
    @Flag(help: "Unused: parsed as lansync's --json is.") var json = false

    func run() throws { print(FileManager.default.fileExists(atPath: "/tmp/\(id)")) }
}

struct Floor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cli-floor",
        abstract: "A command's start in a static Swift binary with Foundation and swift-argument-parser.",
        version: "0.1.0",
        subcommands: [Get.self]
    )
}

Floor.main()
