import Foundation
import LansyncTestSupport
import Testing

/// Every error from the network or the operating system reaches the user as one line that names
/// the address, port or path, and says what to try; never a library's text. Loopback and local
/// paths only.
@Suite struct ErrorMessageTests {
    struct Case: Sendable, CustomStringConvertible {
        let arguments: [String]
        /// Words the one line must hold: what it names, and the hint.
        let words: [String]
        var description: String { arguments.joined(separator: " ") }
    }

    @Test func networkAndSystemErrorsAreOnePlainLine() async throws {
        let cli = CLI("errors")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let a = cli.path("a")
        // A port that refuses, held by this test so nothing else takes it meanwhile.
        let taken = freePorts(1)[0]
        let node = try await NodeProcess(dir: a, port: taken)
        defer { node.stop() }
        try await cli.cluster(["b"])
        let cases = [
            Case(
                arguments: ["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:1"],
                words: ["127.0.0.1:1", "no node listens"]
            ),
            Case(
                arguments: ["sync", "--dir", cli.path("b"), "--peer", "nonexistent.invalid:7420"],
                words: ["nonexistent.invalid", "check the name"]
            ),
            Case(
                arguments: ["node", "--dir", cli.path("b"), "--listen", "127.0.0.1:\(taken)", "--no-mdns"],
                words: ["127.0.0.1:\(taken)", "--listen"]
            ),
            Case(arguments: ["list", "--dir", cli.path("nothing")], words: [cli.path("nothing"), "lansync init"]),
            Case(
                arguments: ["import", "--dir", a, cli.path("missing.jsonl")],
                words: [cli.path("missing.jsonl"), "check the path"]
            ),
            Case(
                arguments: ["cluster", "create", cli.path("no/such/dir/c.pem")],
                words: [cli.path("no/such/dir/c.pem"), "does not exist"]
            ),
            Case(
                arguments: ["export", "--dir", a, "/proc/nope/out.jsonl"],
                words: ["/proc/nope/out.jsonl", "check the path"]
            ),
            Case(
                arguments: ["init", "--dir", cli.path("c"), "--cluster", cli.path("missing.pem")],
                words: [cli.path("missing.pem"), "cluster create"]
            ),
            Case(arguments: ["cluster", "create", cli.path("a")], words: [cli.path("a"), "already exists"]),
        ]
        for c in cases {
            let result = try await cli.run(c.arguments)
            let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("lansync: note:") }
            #expect(result.status != 0, "\(c): succeeded")
            #expect(lines.count == 1, "\(c): \(result.stderr)")
            for word in c.words {
                #expect(result.stderr.contains(word), "\(c): '\(word)' missing from \(result.stderr)")
            }
            // Library and errno text stays out.
            for raw in ["errno", "NIO", "BoringSSL", "SingleConnectionFailure", "Error Domain", "(error set)"] {
                #expect(!result.stderr.contains(raw), "\(c): \(result.stderr)")
            }
        }
    }
}
