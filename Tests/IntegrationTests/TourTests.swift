import Foundation
import LansyncJSON
import LansyncTestSupport
import Subprocess
import SystemPackage
import Testing

/// The README's one-machine tour, run as it stands: two data directories, two nodes on loopback,
/// one edit on each, both replicas end with both items, and `doctor` ends it with exit 0.
@Suite(.serialized) struct TourTests {
    static let readme = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("README.md").path

    /// The shell block after `<!-- tour:one-machine -->` in the README.
    static func tour() throws -> String {
        let text = try String(contentsOfFile: readme, encoding: .utf8)
        guard let marker = text.range(of: "<!-- tour:one-machine -->"),
            let open = text.range(of: "```sh\n", range: marker.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw CLIError("README.md has no one-machine tour block") }
        return String(text[open.upperBound..<close.lowerBound])
    }

    struct CLIError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func theOneMachineTourRunsAsWritten() async throws {
        let cli = CLI("tour")
        defer { cli.cleanUp() }
        // The README names its ports; something else holding them would fail the tour, not lansync
        // (a node of another test shutting down frees its port within seconds).
        for port in [7420, 7421, 7430, 7431] {
            let free = await eventually(every: .milliseconds(200)) { Self.isFree(port) }
            try #require(free, "port \(port) on 127.0.0.1 stayed taken for a minute: the tour cannot run here now")
        }
        let script = try Self.tour()
        try script.write(toFile: cli.path("tour.sh"), atomically: true, encoding: .utf8)
        let bin = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().path
        // The nodes the tour starts in the background write to files, so the shell's end is the
        // tour's end; they are stopped below.
        let run = try await Subprocess.run(
            .path(FilePath("/bin/bash")),
            arguments: ["-c", "bash -e tour.sh >tour.out 2>tour.err"],
            environment: .inherit.updating(["HOME": cli.root, "PATH": "\(bin):/usr/bin:/bin", "LANSYNC_DIR": nil]),
            workingDirectory: FilePath(cli.root),
            output: .discarded,
            error: .discarded
        )
        defer { stopNodes(under: cli.root) }
        let out = (try? String(contentsOfFile: cli.path("tour.out"), encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: cli.path("tour.err"), encoding: .utf8)) ?? ""
        #expect(run.terminationStatus.isSuccess, "the tour failed: \(err)")
        // What the tour printed: the kitchen's list holds both tasks, and its last line, doctor,
        // found nothing wrong (bash -e already failed the tour on its exit status).
        #expect(out.contains("Climb") && out.contains("Fix the bike"), "\(out)\n\(err)")
        #expect(!out.contains("PROBLEM") && out.contains("off on purpose (--no-mdns)"), "\(out)\n\(err)")
        // And both replicas end with both (polled: the tour's own pause is for people).
        for dir in ["kitchen", "garage"] {
            var titles: Set<String> = []
            _ = try await eventually {
                let list = try await cli.run(["list", "--json", "--dir", cli.path(dir)])
                if case .array(let items)? = try? JSON(parsing: list.stdout) {
                    titles = Set(
                        items.compactMap { if case .string(let t)? = $0["fields"]?["title"] { t } else { nil } }
                    )
                }
                return titles.count == 2
            }
            #expect(titles == ["Climb", "Fix the bike"], "\(dir): \(titles)")
        }
    }

    /// True if nothing listens on 127.0.0.1:`port`.
    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// SIGTERM to every process whose command line names the scratch area (the tour's nodes).
    func stopNodes(under root: String) {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for pid in pids.compactMap({ Int32($0) }) where pid != getpid() {
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            let command = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            if command.contains(root), command.contains(" node ") { kill(pid, SIGTERM) }
        }
    }
}
