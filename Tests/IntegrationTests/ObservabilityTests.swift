import Foundation
import LansyncJSON
import LansyncTestSupport
import Testing

/// What an operator sees of a running node (issue 18): its log, as text and as JSON Lines, at the
/// level asked for, and its Prometheus metrics, on the real binary.
@Suite(.serialized) struct ObservabilityTests {
    /// GET with curl; the status code and the body.
    static func get(_ url: String, token: String? = nil) -> (status: Int, body: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["curl", "-s", "-w", "\n%{http_code}", "--max-time", "10"]
            + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + [url]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return (0, "cannot run curl") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let cut = text.lastIndex(of: "\n") else { return (0, text) }
        return (Int(text[text.index(after: cut)...]) ?? 0, String(text[..<cut]))
    }

    /// A metric's value in Prometheus's text format (the first sample whose name and labels
    /// start with `prefix`).
    static func sample(_ text: String, _ prefix: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            // A prefix without labels names that metric only, not every metric it starts.
            guard prefix.contains("{") || rest.first == " " || rest.first == "{" else { continue }
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// Prometheus by the book: every family has its HELP and TYPE, every family
    /// Docs/OPERATIONS.md documents is there (at zero if nothing happened yet: this node runs
    /// without mDNS, and no connection was refused), and `promtool check metrics` (Debian's
    /// `prometheus` package, which scripts/test.sh installs) finds nothing against the naming
    /// guide or the format.
    static func judgeByTheBook(_ text: String) throws {
        let lines = text.split(separator: "\n")
        func families(_ marker: String) -> Set<String> {
            Set(
                lines.filter { $0.hasPrefix(marker) }.compactMap {
                    $0.dropFirst(marker.count).split(separator: " ").first.map(String.init)
                }
            )
        }
        let typed = families("# TYPE ")
        let helped = Set(
            lines.filter { $0.hasPrefix("# HELP ") }.compactMap { line -> String? in
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1)
                return parts.count == 2 && !parts[1].isEmpty ? String(parts[0]) : nil
            }
        )
        #expect(typed.count >= 30 && typed == helped, "without help: \(typed.subtracting(helped).sorted())")
        let operations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/OPERATIONS.md")
        let documented = Set(
            try String(contentsOf: operations, encoding: .utf8).split(separator: "\n").filter {
                $0.hasPrefix("| `lansync_")
            }
            .flatMap { row in
                row.split(separator: "|")[0].split(separator: "`").filter { $0.hasPrefix("lansync_") }.map {
                    String($0.prefix { $0 != "{" })
                }
            }
        )
        #expect(documented.count >= 30, "\(documented)")
        #expect(
            documented.subtracting(typed).isEmpty,
            "documented but absent: \(documented.subtracting(typed).sorted())"
        )
        #expect(
            typed.subtracting(documented).isEmpty,
            "served but not documented: \(typed.subtracting(documented).sorted())"
        )
        #expect(sample(text, #"lansync_discovery_events_total{event="found"}"#) == 0, "\(text)")
        #expect(sample(text, #"lansync_connections_refused_total{reason="revoked"}"#) == 0, "\(text)")

        let promtool = "/usr/bin/promtool"
        guard FileManager.default.isExecutableFile(atPath: promtool) else {
            Issue.record(
                "\(promtool) is missing: 'apt-get install prometheus' (scripts/test.sh does) to check the metrics"
            )
            return
        }
        let directory = makeTemporaryDirectory("promtool")
        try text.write(toFile: directory + "/metrics.txt", atomically: true, encoding: .utf8)
        let child = try SpawnedChild.spawn(
            ["/bin/sh", "-c", "\(promtool) check metrics < \(directory)/metrics.txt"],
            standardOutput: directory + "/out.txt",
            standardError: directory + "/out.txt"
        )
        let status = child.wait()
        let said = (try? String(contentsOfFile: directory + "/out.txt", encoding: .utf8)) ?? ""
        #expect(status == 0 && said.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "promtool: \(said)")
    }

    @Test func theLogSaysWhatHappenedAsTextAndAsJSON() async throws {
        let cli = CLI("logs")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0], peers: [ports[1]])
        defer { a.stop() }
        var b = try await NodeProcess(
            dir: cli.path("b"),
            port: ports[1],
            peers: [ports[0]],
            extra: ["--log-format", "json"]
        )
        defer { b.stop() }
        try await cli.ok(["add", "--dir", cli.path("a"), "--type", "task", "title=logged"])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        // A session start on both sides, named and with its path.
        #expect(
            await eventually(within: .seconds(20)) {
                a.logText.contains("session with b (") && a.logText.contains("started: direct")
            },
            "a: \(a.logText)"
        )
        // A stranger's connection that is not TLS: one line, with the address and why.
        _ = tcpSend(port: ports[0], bytes: Array("GET / HTTP/1.0\r\n\r\nnot a TLS hello\n".utf8), keepOpen: false)
        #expect(
            await eventually(within: .seconds(20)) {
                a.logText.contains("closed a connection from 127.0.0.1 before a session")
            },
            "a: \(a.logText)"
        )
        // b stops: a logs the session's end with what it moved.
        b.stop()
        #expect(
            await eventually(within: .seconds(20)) {
                a.logText.contains("ended after") && a.logText.contains("field states (")
            },
            "a: \(a.logText)"
        )
        // Every line of b's log is a JSON object with a time, a level and a message; its session
        // end carries the figures as keys.
        let lines = b.logText.split(separator: "\n").map(String.init)
        #expect(!lines.isEmpty)
        var sawEnd = false
        for line in lines {
            let json = try JSON(parsing: line)
            #expect(json["time"] != nil && json["level"] != nil && json["message"] != nil, "\(line)")
            if json["event"] == .string("session-end"), json["replaced"] == nil {
                sawEnd = true
                for key in ["peer", "path", "sent", "received", "sent_bytes", "received_bytes", "duration_s"] {
                    #expect(json[key] != nil, "session-end lacks \(key): \(line)")
                }
                #expect(json["peer"] == .string("a") && json["path"] == .string("direct"), "\(line)")
            }
        }
        #expect(sawEnd, "b logged no session end: \(b.logText)")

        // At notice, sessions (info) are not logged; what an operator must know still is.
        b = try await NodeProcess(
            dir: cli.path("b"),
            port: ports[1],
            peers: [ports[0]],
            extra: ["--log-level", "notice"]
        )
        try await cli.ok(["add", "--dir", cli.path("a"), "--type", "task", "title=quiet"])
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        b.stop()
        #expect(!b.logText.contains("session with"), "b at notice: \(b.logText)")
        #expect(b.logText.contains("notice node") && b.logText.contains("listening on"), "b at notice: \(b.logText)")

        // A level or format that does not exist: a usage error that names the choices.
        let wrong = try await cli.run(["node", "--dir", cli.path("b"), "--log-level", "loud"])
        #expect(wrong.status == 64 && wrong.stderr.contains("debug, info, notice"), "\(wrong.stderr)")
        let format = try await cli.run(["node", "--dir", cli.path("b"), "--log-format", "xml"])
        #expect(format.status == 64 && format.stderr.contains("text or json"), "\(format.stderr)")
    }

    @Test func metricsCountSessionsStatesAndRequests() async throws {
        let cli = CLI("metrics")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        for i in 0..<5 { try await cli.ok(["add", "--dir", cli.path("a"), "--type", "task", "n=\(i)"]) }
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "c1", "title=b's"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "c1", "title=a's"])
        let ports = freePorts(3)
        let a = try await NodeProcess(
            dir: cli.path("a"),
            port: ports[0],
            peers: [ports[1]],
            extra: ["--api", "127.0.0.1:\(ports[2])"]
        )
        defer { a.stop() }
        let b = try await NodeProcess(dir: cli.path("b"), port: ports[1], peers: [ports[0]])
        defer { b.stop() }
        #expect(try await cli.waitForConvergence([cli.path("a"), cli.path("b")]) != nil)
        let url = "http://127.0.0.1:\(ports[2])/metrics"
        let token = try await cli.ok(["api-token", "--dir", cli.path("a")]).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        // Behind the token, like every path with data.
        #expect(Self.get(url).status == 401)
        var text = ""
        #expect(
            await eventually(within: .seconds(20)) {
                text = Self.get(url, token: token).body
                // Counters move as sessions report: wait for what the convergence implies.
                return Self.sample(text, "lansync_peers_connected") == 1
                    && Self.sample(text, "lansync_field_states_received_total") ?? 0 >= 1
                    // The view counts the session just after the peer table does.
                    && Self.sample(text, "lansync_view_active") == 1
            },
            "\(text)"
        )
        #expect(Self.sample(text, "lansync_sessions_started_total")! >= 1, "\(text)")
        #expect(Self.sample(text, "lansync_sessions_active") == 1, "\(text)")
        // a sent its 5 items (their fields) and took b's version of c1: a conflict, open on both.
        #expect(Self.sample(text, "lansync_field_states_sent_total")! >= 5, "\(text)")
        #expect(Self.sample(text, "lansync_field_states_received_total")! >= 1, "\(text)")
        #expect(Self.sample(text, "lansync_field_states_applied_total")! >= 1, "\(text)")
        #expect(Self.sample(text, "lansync_merges_total")! >= 1, "\(text)")
        #expect(Self.sample(text, "lansync_sent_bytes_total")! > 0, "\(text)")
        #expect(Self.sample(text, "lansync_items") == 6, "\(text)")
        #expect(Self.sample(text, "lansync_open_conflicts") == 1, "\(text)")
        #expect(Self.sample(text, #"lansync_peer_lacks{peer="b""#) == 0, "\(text)")
        // Two members: a full mesh, b in it.
        #expect(Self.sample(text, "lansync_view_bounded") == 0, "\(text)")
        #expect(text.contains("# HELP lansync_open_conflicts"), "gauges explain themselves: \(text)")
        try Self.judgeByTheBook(text)
        // The API counts its requests, the refused one included.
        #expect(Self.sample(text, #"lansync_api_requests_total{method="GET",status="401"}"#)! >= 1, "\(text)")
        // b goes away: the peer gauge says so.
        b.stop()
        #expect(
            await eventually(within: .seconds(20)) {
                text = Self.get(url, token: token).body
                return Self.sample(text, #"lansync_peer_connected{peer="b""#) == 0
            },
            "\(text)"
        )
        #expect(Self.sample(text, "lansync_sessions_active") == 0, "\(text)")
        #expect(a.isRunning)
    }
}
