import Foundation
import LansyncJSON
import Testing

/// The web page (issue 18) on the real binary: the node serves the files in the repository with
/// their security headers and no token, `lansync ui`'s link logs in once, nothing with data is
/// served without the token whatever the path's spelling, and a real browser (Debian's chromium,
/// driven by Playwright for Python: Tests/ui/page_test.py) logs in, edits, resolves a conflict and
/// watches a peer go and come back, with no JavaScript error.
@Suite(.serialized) struct UITests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Python with Playwright: where scripts/test.sh installed it, or `$LANSYNC_PLAYWRIGHT_PYTHON`.
    static let python: String? = {
        let candidates: [String?] = [
            ProcessInfo.processInfo.environment["LANSYNC_PLAYWRIGHT_PYTHON"],
            repository.appendingPathComponent(".build/venv/bin/python").path,
        ]
        return candidates.compactMap { $0 }.first { path in
            FileManager.default.isExecutableFile(atPath: path)
                && runBlocking(path, ["-c", "import playwright.sync_api"]).status == 0
        }
    }()

    static let chromium = ProcessInfo.processInfo.environment["LANSYNC_CHROMIUM"] ?? "/usr/bin/chromium"

    /// Runs `executable` to the end off the cooperative pool (``offThePool(_:)``).
    static func run(_ executable: String, _ arguments: [String]) async -> (status: Int32, output: String) {
        await offThePool { runBlocking(executable, arguments) }
    }

    static func runBlocking(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        guard (try? process.run()) != nil else { return (127, "cannot run \(executable)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A request with curl: status, headers (lowercased names) and body.
    static func request(
        _ url: String,
        method: String = "GET",
        body: String? = nil,
        token: String? = nil
    ) -> (status: Int, headers: [String: String], body: String) {
        var arguments = ["curl", "-s", "-i", "--path-as-is", "--max-time", "10", "-X", method]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        let result = runBlocking("/usr/bin/env", arguments + [url])
        let parts = result.output.components(separatedBy: "\r\n\r\n")
        let head = parts.first?.split(separator: "\r\n") ?? []
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces
            )
        }
        return (status, headers, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func theNodeServesThePageAndItsLoginOnce() async throws {
        let cli = CLI("ui")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        // Without a node there is no page to open: said plainly.
        let early = try await cli.run(["ui", "--dir", cli.path("a")])
        #expect(early.status == 1 && early.stderr.contains("no node is running"), "\(early.stderr)")
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0], extra: ["--api", "127.0.0.1:\(ports[1])"])
        defer { a.stop() }
        let base = "http://127.0.0.1:\(ports[1])"
        var page: (status: Int, headers: [String: String], body: String) = (0, [:], "")
        _ = await eventually(within: .seconds(30)) {
            page = Self.request(base + "/")
            return page.status == 200
        }
        // Every file of the page, exactly as in the repository (scripts/ui.sh embedded them).
        let folder = Self.repository.appendingPathComponent("Sources/LansyncAPI/UI")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        #expect(files.contains("index.html") && files.contains("app.js"))
        for name in files {
            let served = name == "index.html" ? page : Self.request(base + "/ui/" + name)
            let file = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(served.status == 200, "\(name): \(served.status)")
            #expect(served.body == file, "\(name) is served as in the repository: run scripts/ui.sh")
            #expect(served.headers["content-security-policy"]?.contains("script-src 'self'") == true, "\(name)")
            #expect(served.headers["x-content-type-options"] == "nosniff", "\(name)")
        }
        #expect(Self.request(base + "/ui/nothing.js").status == 404)
        // Nothing with data without the token, however the path is spelt.
        for path in [
            "/v1/items", "//v1/items", "/v1//items", "/ui/../v1/items", "/V1/items", "/metrics", "/v1/status/",
        ] {
            #expect(Self.request(base + path).status == 401, "\(path) without a token")
        }
        // `lansync ui`: a link whose code logs in once.
        let link = try await cli.ok(["ui", "--dir", cli.path("a")]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(link.hasPrefix(base + "/#login="), "\(link)")
        let code = String(link.split(separator: "=").last ?? "")
        let token = try await cli.ok(["api-token", "--dir", cli.path("a")]).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        // The login is a session of its own, not the node's token: it works like the token until
        // the page logs out, and then never again.
        let first = Self.request(base + "/v1/login", method: "POST", body: #"{"code":"\#(code)"}"#)
        guard first.status == 200, case .string(let session)? = (try? JSON(parsing: first.body))?["token"] else {
            Issue.record("no session: \(first.body)")
            return
        }
        #expect(session != token && session.count == 64)
        #expect(Self.request(base + "/v1/status", token: session).status == 200)
        #expect(
            Self.request(base + "/v1/session", method: "DELETE", token: token).status == 400,
            "the node's token is no session"
        )
        #expect(Self.request(base + "/v1/session", method: "DELETE", token: session).status == 200)
        #expect(Self.request(base + "/v1/status", token: session).status == 401, "a session that logged out")
        #expect(Self.request(base + "/v1/status", token: token).status == 200)
        let again = Self.request(base + "/v1/login", method: "POST", body: #"{"code":"\#(code)"}"#)
        #expect(again.status == 401 && again.body.contains("lansync ui"), "\(again.body)")
        let extra = Self.request(base + "/v1/login", method: "POST", body: #"{"code":"\#(code)","remember":true}"#)
        #expect(extra.status == 400, "a login body is exactly {\"code\"}: \(extra.body)")
        let garbage = Self.request(base + "/v1/login", method: "POST", body: "{not json")
        #expect(garbage.status == 400 && garbage.body.contains("code"), "\(garbage.body)")
        #expect(a.isRunning)
    }

    @Test(
        .enabled(
            if: Self.python != nil && FileManager.default.isExecutableFile(atPath: Self.chromium),
            "Playwright for Python or chromium is missing: scripts/test.sh installs both (Debian's chromium, Playwright from PyPI into .build/venv)"
        )
    )
    func aRealBrowserUsesThePage() async throws {
        let shots = FileManager.default.temporaryDirectory.appendingPathComponent("lansync-ui-screenshots").path
        try? FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let result = await Self.run(
            Self.python!,
            [
                Self.repository.appendingPathComponent("Tests/ui/page_test.py").path,
                "--lansync", CLI.binary, "--screenshots", shots,
            ]
        )
        print(result.output)
        print("screenshots of each view: \(shots)")
        #expect(result.status == 0, "the browser test failed: \(Self.failedCheck(in: result.output))")
    }

    /// The browser test's `FAIL` line and the indented lines under it (the error, the check's
    /// steps done): CI's summary shows a failed test's message, and the output above it may be
    /// cut before it.
    static func failedCheck(in output: String) -> String {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("FAIL  ") }) else {
            return "no check failed by name (its output is above)"
        }
        let rest = lines[(start + 1)...].prefix { $0.hasPrefix("      ") }
        return ([lines[start]] + rest.prefix(12)).joined(separator: "\n")
    }
}
