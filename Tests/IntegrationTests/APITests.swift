import Foundation
import LansyncJSON
import LansyncReplica
import LansyncStore
import Testing

/// The local API and its change feed on the real binary (issue 17), driven by a small Python
/// client (Tests/api/apiclient.py, standard library only): every endpoint with good and bad
/// input, and a feed followed across a node restart that delivers every change once, in order.
@Suite(.serialized) struct APITests {
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("api/apiclient.py").path

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// schemathesis (from PyPI): where scripts/test.sh installed it, or `$LANSYNC_SCHEMATHESIS`.
    static let schemathesis: String? = {
        let candidates: [String?] = [
            ProcessInfo.processInfo.environment["LANSYNC_SCHEMATHESIS"],
            repository.appendingPathComponent(".build/venv/bin/schemathesis").path,
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Runs the client; returns its exit status and output.
    func client(_ arguments: [String]) async -> (status: Int32, output: String) {
        await run("/usr/bin/env", ["python3", Self.client] + arguments)
    }

    /// Runs a program in `directory` (schemathesis leaves a cache where it runs), waited for off
    /// Swift's cooperative pool (``offThePool(_:)``): schemathesis and the feed's followers run
    /// for a minute.
    func run(
        _ executable: String,
        _ arguments: [String],
        in directory: String? = nil
    ) async -> (status: Int32, output: String) {
        await offThePool { Self.runBlocking(executable, arguments, in: directory) }
    }

    static func runBlocking(
        _ executable: String,
        _ arguments: [String],
        in directory: String?
    ) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (127, "cannot run python3: \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func token(_ cli: CLI, _ dir: String) async throws -> String {
        try await cli.ok(["api-token", "--dir", cli.path(dir)]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Node `a` of `cli`'s cluster, running with its API: the node, the API's base URL, its token.
    func nodeWithAPI(_ cli: CLI) async throws -> (node: NodeProcess, base: String, token: String) {
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0], extra: ["--api", "127.0.0.1:\(ports[1])"])
        return (a, "http://127.0.0.1:\(ports[1])", try await token(cli, "a"))
    }

    @Test func everyEndpointAnswersAndBadInputChangesNothing() async throws {
        let cli = CLI("api")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let ports = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: ports[0], extra: ["--api", "127.0.0.1:\(ports[1])"])
        defer { a.stop() }
        let token = try await token(cli, "a")
        #expect(token.count == 64)
        let mode = try FileManager.default.attributesOfItem(atPath: cli.path("a/api-token"))[.posixPermissions] as? Int
        #expect(mode == 0o600, "the token file is the owner's alone")
        // The node says where its API is.
        let api: String? = try await eventually(within: .seconds(30)) {
            if case .string(let address)? = try await cli.status(cli.path("a"))["api"] { return address }
            return nil
        }
        #expect(api == "127.0.0.1:\(ports[1])")
        let run = await client(["check", "http://127.0.0.1:\(ports[1])", token])
        print(run.output)
        #expect(run.status == 0, "\(run.output)\n\(a.logText)")
        // What the API wrote is what the CLI reads.
        #expect(try await cli.ok(["get", "--dir", cli.path("a"), "api-1"]).contains("Climb together"))
        #expect(a.isRunning)
    }

    /// The node serves the document in the repository, and keeps to it: schemathesis fuzzes
    /// every operation (examples, boundaries, random and stateful sequences of calls, with the
    /// checks of Tests/api/schemathesis.toml), and afterwards the node is up and its replica
    /// sound. It found a value nested too deep that went in and left the file unreadable, and
    /// values that start with a combining mark.
    @Test(
        .enabled(
            if: Self.schemathesis != nil,
            "schemathesis is not installed: scripts/test.sh installs it from PyPI into .build/venv"
        )
    )
    func theAPIKeepsToItsOpenAPIDocument() async throws {
        let cli = CLI("api-fuzz")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=first", "tags+=x"])
        let (a, base, token) = try await nodeWithAPI(cli)
        defer { a.stop() }
        let document = Self.repository.appendingPathComponent("Sources/LansyncAPI/openapi.json").path
        let served = await run(
            "/usr/bin/env",
            [
                "curl", "-sf", "--retry", "20", "--retry-connrefused", "--retry-delay", "0",
                "-H", "Authorization: Bearer \(token)", "\(base)/v1/openapi.json",
            ]
        )
        let file = try String(contentsOfFile: document, encoding: .utf8)
        #expect(
            served.status == 0 && served.output == file.trimmingCharacters(in: .newlines),
            "served: \(served.output.prefix(200))"
        )
        let fuzz = await run(
            Self.schemathesis!,
            [
                "--no-color", "--config-file",
                Self.repository.appendingPathComponent("Tests/api/schemathesis.toml").path,
                "run", document, "--url", base, "-H", "Authorization: Bearer \(token)",
                "--max-examples", "100", "--workers", "1", "--request-timeout", "10",
            ],
            in: cli.path("")
        )
        print(fuzz.output)
        #expect(fuzz.status == 0, "schemathesis found failures (its report is above)")
        #expect(a.isRunning, "\(a.logText)")
        let check = try await cli.run(["check", "--dir", cli.path("a")])
        #expect(check.status == 0 && check.stdout.contains("sound"), "\(check.stdout)\(check.stderr)")
    }

    /// Clients that hold connections without finishing a request, a body stalled half way, and
    /// feed clients that never read (with 40,000 changes to send them): the API still serves
    /// others, a reading feed client still gets every change once, the stalled body changes
    /// nothing, and the node stays up.
    @Test func slowClientsDoNotStopTheAPI() async throws {
        let cli = CLI("api-slow")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let lines = (0..<20_000).map {
            #"{"id":"big-\#($0)","type":"big","fields":{"n":\#($0),"t":"a hundred bytes or so of text, so that the feed has megabytes to send a client that never reads"}}"#
        }
        try lines.joined(separator: "\n").write(toFile: cli.path("big.jsonl"), atomically: true, encoding: .utf8)
        try await cli.ok(["import", "--dir", cli.path("a"), cli.path("big.jsonl")])
        let (a, base, token) = try await nodeWithAPI(cli)
        defer { a.stop() }
        var run: (status: Int32, output: String) = (0, "")
        _ = await eventually(within: .seconds(30), every: .milliseconds(200)) {
            run = await client(["slow", base, token])
            return !run.output.contains("Connection refused")
        }
        print(run.output)
        #expect(run.status == 0, "\(run.output)\n\(a.logText)")
        #expect(a.isRunning)
    }

    /// Another process holding the replica's write lock (a large `lansync import`) makes the API's
    /// edits wait, not its reads: in CI run 77 two waiting writes held both of the node's I/O
    /// threads, and the web page's reads queued behind them until a reload timed out.
    @Test func readsAnswerWhileWritesWaitForTheLock() async throws {
        let cli = CLI("api-locked")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let (a, base, token) = try await nodeWithAPI(cli)
        defer { a.stop() }
        let run = await client(["locked", base, token, cli.path("a/replica.sqlite")])
        print(run.output)
        #expect(run.status == 0, "\(run.output)\n\(a.logText)")
        #expect(a.isRunning)
    }

    /// Acknowledgements reach the feed (`sync=true`): an item edited on A while B is down reads
    /// SYNCED after the `sync` event that B's session brings, with no status polled.
    @Test func theFeedSaysWhenPeersAcknowledge() async throws {
        let cli = CLI("api-acks")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let p = freePorts(3)
        let a = try await NodeProcess(
            dir: cli.path("a"),
            port: p[0],
            peers: [p[2]],
            extra: ["--api", "127.0.0.1:\(p[1])"]
        )
        defer { a.stop() }
        let token = try await token(cli, "a")
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "acked", "n=1"])
        let before = try JSON(parsing: try await cli.ok(["get", "--dir", cli.path("a"), "acked", "--json"]))
        #expect(before["sync"]?["state"] != .string("SYNCED"), "nobody holds it yet: \(before)")
        let ready = cli.path("following")
        let follower = Task.detached { [self] in
            await client(["acks", "http://127.0.0.1:\(p[1])", token, "acked", "30", ready])
        }
        // B starts once the feed is followed: a B that syncs before leaves no event to see.
        _ = await eventually(within: .seconds(30), every: .milliseconds(50)) {
            FileManager.default.fileExists(atPath: ready)
        }
        let b = try await NodeProcess(dir: cli.path("b"), port: p[2], peers: [p[0]])
        defer { b.stop() }
        let followed = await follower.value
        print(followed.output)
        #expect(followed.status == 0, "\(followed.output)\nA:\n\(a.logText)\nB:\n\(b.logText)")
        #expect(followed.output.contains("sync events") && !followed.output.contains(" 0 sync events"))
    }

    /// Issue 62, defect 8: an event stream opened with a credential that is then revoked (the
    /// token rotated, a page session logged out) ends, and carries nothing written after the
    /// revocation; the old credential is refused for new requests too. Failed before the fix: the
    /// stream went on delivering every later change.
    @Test func revokedCredentialsEndTheirStreams() async throws {
        let cli = CLI("api-revoked")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let (a, base, token) = try await nodeWithAPI(cli)
        defer { a.stop() }
        let link = try await cli.ok(["ui", "--dir", cli.path("a")]).trimmingCharacters(in: .whitespacesAndNewlines)
        let loggedIn = await client(["login", base, link])
        #expect(loggedIn.status == 0, "\(loggedIn.output)")
        let session = loggedIn.output.trimmingCharacters(in: .whitespacesAndNewlines)

        /// Follows the feed with `credential`, revokes it with `revoke`, then writes an item.
        func follow(_ credential: String, _ name: String, revoke: () async throws -> Void) async throws -> JSON {
            let ready = cli.path("ready-\(name)")
            let follower = Task.detached { [self] in await client(["revoked", base, credential, ready, "30"]) }
            _ = await eventually(within: .seconds(30), every: .milliseconds(50)) {
                FileManager.default.fileExists(atPath: ready)
            }
            try await cli.ok(["add", "--dir", cli.path("a"), "--id", "before-\(name)", "n=1"])
            // Revoked once the stream carried that change (a bound on a hang, not a timing).
            _ = await eventually(within: .seconds(60), every: .milliseconds(20)) {
                FileManager.default.fileExists(atPath: ready + ".got")
            }
            let revoked = Date().timeIntervalSince1970
            try await revoke()
            try await cli.ok(["add", "--dir", cli.path("a"), "--id", "after-\(name)", "n=2"])
            let followed = await follower.value
            let result = try JSON(parsing: followed.output)
            if case .double(let ended)? = result["ended"] {
                print("revoked (\(name)): the stream ended \(ended - revoked) s after the revocation")
            }
            #expect(
                result["ended"] != nil && result["ended"] != .null,
                "the stream ended (\(name)): \(followed.output)"
            )
            let ids = result["changes"]?.text ?? ""
            #expect(ids.contains("before-\(name)"), "the stream worked before the revocation: \(followed.output)")
            #expect(!ids.contains("after-\(name)"), "nothing written after the revocation came: \(followed.output)")
            return result
        }

        _ = try await follow(session, "logout") {
            let out = await client(["logout", base, session])
            #expect(out.status == 0, "\(out.output)")
        }
        _ = try await follow(token, "rotate") {
            try await cli.ok(["api-token", "--rotate", "--dir", cli.path("a")])
        }
        let old = await client(["revoked", base, token, cli.path("ready-old"), "5"])
        #expect(old.output.contains("401"), "the old token is refused: \(old.output)")
        #expect(a.isRunning, "the node is still up")
    }

    /// The issue's script: items added over HTTP on A, B's feed followed meanwhile, B restarted
    /// in the middle; every create arrives once, in order, and the follower resumes with
    /// Last-Event-ID.
    @Test func theFeedDeliversEveryChangeOnceAcrossARestart() async throws {
        let cli = CLI("api-feed")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let p = freePorts(4)
        let a = try await NodeProcess(
            dir: cli.path("a"),
            port: p[0],
            peers: [p[2]],
            extra: ["--api", "127.0.0.1:\(p[1])"]
        )
        defer { a.stop() }
        var b = try await NodeProcess(
            dir: cli.path("b"),
            port: p[2],
            peers: [p[0]],
            extra: ["--api", "127.0.0.1:\(p[3])"]
        )
        defer { b.stop() }
        let tokenA = try await token(cli, "a")
        let tokenB = try await token(cli, "b")
        let out = cli.path("feed.jsonl")
        // Each create is two changes on B (_type, i): 60 items, 120 events.
        let follower = Task.detached { [self] in
            await client(["follow", "http://127.0.0.1:\(p[3])", tokenB, out, "120", "60"])
        }
        let first = await client(["add", "http://127.0.0.1:\(p[1])", tokenA, "30", "one"])
        #expect(first.status == 0, "\(first.output)")
        // B restarts between the two batches, once its follower holds the first (60 events).
        _ = await eventually(within: .seconds(60)) {
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").count >= 60
        }
        b.stop()
        b = try await NodeProcess(dir: cli.path("b"), port: p[2], peers: [p[0]], extra: ["--api", "127.0.0.1:\(p[3])"])
        let second = await client(["add", "http://127.0.0.1:\(p[1])", tokenA, "30", "two"])
        #expect(second.status == 0, "\(second.output)")
        let followed = await follower.value
        print(followed.output)
        #expect(followed.status == 0, "\(followed.output)\n\(b.logText)")
        let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
        let events = try lines.map { try JSON(parsing: String($0)) }
        let seqs = events.compactMap { event -> Int64? in
            if case .integer(let n)? = event["seq"] { n } else { nil }
        }
        #expect(seqs.count == 120 && seqs == seqs.sorted() && Set(seqs).count == seqs.count, "in order, once: \(seqs)")
        let created = events.filter { $0["kind"] == .string("create") }.compactMap { event -> String? in
            if case .string(let id)? = event["id"] { id } else { nil }
        }
        let expected = (0..<30).map { "one-\($0)" } + (0..<30).map { "two-\($0)" }
        #expect(Set(created) == Set(expected) && created.count == 60, "every create once: \(created)")
        #expect(followed.output.contains("reconnects") && !followed.output.contains("0 reconnects"), "it reconnected")
    }
}

/// `lansync list --where/--sort/--limit/--explain` and `lansync index` on the real binary.
@Suite struct QueryCLITests {
    @Test func listSelectsSortsAndSaysWhichIndexItUses() async throws {
        let cli = CLI("query")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let dir = cli.path("a")
        for (i, owner) in ["ana", "bo", "ana", "cy", "ana"].enumerated() {
            try await cli.ok([
                "add", "--dir", dir, "--id", "t\(i)", "owner=\(owner)", "priority=\(i)", "tags=[\"x\(i % 2)\"]",
            ])
        }
        let json = try await cli.ok([
            "list", "--dir", dir, "--where", "owner=ana", "--where", "priority>=1", "--sort", "-priority", "--json",
        ])
        let ids = try JSON(parsing: json)
        guard case .array(let items) = ids else { return }
        #expect(items.map { $0["id"] } == [.string("t4"), .string("t2")], "\(json)")
        let limited = try await cli.ok(["list", "--dir", dir, "--where", "tags contains x0", "--limit", "2", "--json"])
        #expect(
            try JSON(parsing: limited) == .array([])
                ? false : limited.contains("t0") && limited.contains("t2") && !limited.contains("t4")
        )
        #expect(
            try await cli.ok(["list", "--dir", dir, "--where", "owner=ana", "--explain"]).contains(
                "no filter on an indexed field"
            )
        )
        #expect(try await cli.ok(["index", "--dir", dir, "owner"]).contains("owner: indexed"))
        #expect(try await cli.ok(["index", "--dir", dir]).contains("owner  5 item(s)"))
        let plan = try await cli.ok(["list", "--dir", dir, "--where", "owner=ana", "--explain"])
        #expect(plan.contains("index on owner") && plan.contains("query_by_txt"), "\(plan)")
        let bad = try await cli.run(["list", "--dir", dir, "--where", "owner"])
        #expect(bad.status != 0 && bad.stderr.contains("is not a condition"), "\(bad.stderr)")
        #expect(bad.stderr.split(separator: "\n").count == 1)
    }

    /// `list --search`: every word, any case, in ids, types, names and values; an edit or an
    /// unset changes what is found; nothing to search for is a mistake.
    @Test func listSearchesWordsInEveryItem() async throws {
        let cli = CLI("search")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let dir = cli.path("a")
        try await cli.ok(["add", "--dir", dir, "--id", "s1", "--type", "Recipe", "title=Apple Pie", "tags=[\"Oven\"]"])
        try await cli.ok(["add", "--dir", dir, "--id", "s2", "title=apple tea", "note=Über gut"])
        try await cli.ok(["add", "--dir", dir, "--id", "s3", "title=Pear", "steps=3"])
        func found(_ words: String) async throws -> [String] {
            let json = try JSON(parsing: try await cli.ok(["list", "--dir", dir, "--search", words, "--json"]))
            guard case .array(let items) = json else { return [] }
            return items.compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
        }
        #expect(try await found("APPLE") == ["s1", "s2"])
        #expect(try await found("apple oven") == ["s1"])
        #expect(try await found("recipe") == ["s1"])
        #expect(try await found("über") == ["s2"])
        #expect(try await found("steps") == ["s3"])
        #expect(try await found("s3 pear") == ["s3"])
        #expect(try await found("pie tea").isEmpty)
        try await cli.ok(["set", "--dir", dir, "s1", "title=Plum"])
        try await cli.ok(["unset", "--dir", dir, "s3", "steps"])
        #expect(try await found("apple") == ["s2"])
        #expect(try await found("steps").isEmpty)
        let bad = try await cli.run(["list", "--dir", dir, "--search", "  "])
        #expect(bad.status != 0 && bad.stderr.contains("--search needs at least one word"), "\(bad.stderr)")
    }

    /// The search texts are not written by the edits and syncs that change items: CLI edits leave
    /// them behind and a search still finds the items (read from their fields); a peer's node
    /// receives the edits, finds them too, and writes the texts once its replica is quiet.
    @Test func aRunningNodeWritesTheSearchTextsOnceQuiet() async throws {
        let cli = CLI("search-node")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        for i in 0..<12 {
            try await cli.ok(["add", "--dir", cli.path("a"), "--id", "q\(i)", "title=Quince \(i)"])
        }
        let behind = try ReplicaStore.open(path: cli.path("a/replica.sqlite")).searchBacklog()
        #expect(!behind.isEmpty, "the CLI's edits wrote no search text: \(behind)")
        func found(_ node: String, _ words: String) async throws -> Int {
            let json = try JSON(
                parsing: try await cli.ok(["list", "--dir", cli.path(node), "--search", words, "--json"])
            )
            guard case .array(let items) = json else { return -1 }
            return items.count
        }
        #expect(try await found("a", "quince") == 12)
        #expect(try await found("a", "quince 1") == 3, "q1, q10, q11")
        let p = freePorts(2)
        let a = try await NodeProcess(dir: cli.path("a"), port: p[0], peers: [p[1]])
        defer { a.stop() }
        let b = try await NodeProcess(dir: cli.path("b"), port: p[1], peers: [p[0]])
        defer { b.stop() }
        #expect(try await eventually(within: .seconds(20)) { try await found("b", "quince") == 12 }, "\(b.logText)")
        let written = try await eventually(within: .seconds(20)) {
            try ReplicaStore.open(path: cli.path("b/replica.sqlite")).searchBacklog().isEmpty
                && (try ReplicaStore.open(path: cli.path("a/replica.sqlite")).searchBacklog().isEmpty)
        }
        #expect(written, "both nodes wrote the texts once quiet")
        #expect(try await found("b", "quince 1") == 3)
    }
}

/// `lansync watch`: the same feed on the command line, with or without a running node.
@Suite(.serialized) struct WatchTests {
    /// Starts `lansync watch ARGS` and collects its output lines as they come.
    final class Watcher: @unchecked Sendable {
        // @unchecked: `lines` is only touched under `lock`.
        let process = Process()
        private let lock = NSLock()
        private var text = ""

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["watch"] + arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                self?.lock.withLock { self?.text += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
        }

        var lines: [String] { lock.withLock { text.split(separator: "\n").map(String.init) } }

        /// Waits until a line contains `needle`; true if one did within 10 s.
        func waitFor(_ needle: String) async throws -> Bool {
            await eventually(within: .seconds(10), every: .milliseconds(50)) {
                lines.contains(where: { $0.contains(needle) })
            }
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    @Test func watchFollowsTheFeedWithOrWithoutANode() async throws {
        let cli = CLI("watch")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t1", "title=first"])
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=second"])
        // Every field once, at its latest change.
        let all = try await cli.ok(["watch", "--dir", cli.path("a"), "--since", "0", "--once", "--json"])
        let entries = try all.split(separator: "\n").map { try JSON(parsing: String($0)) }
        #expect(entries.map { $0["kind"] } == [.string("create"), .string("edit")], "\(all)")
        #expect(entries.last?["value"] == .string("second"))
        let human = try await cli.ok(["watch", "--dir", cli.path("a"), "--since", "0", "--once", "--field", "title"])
        #expect(human.contains("edit  t1.title = second"), "\(human)")

        // Following, without a node: the next edit appears; with a node, too.
        let watcher = try Watcher(["--dir", cli.path("a"), "--json"])
        defer { watcher.stop() }
        // The watcher starts at the replica's latest change, and prints nothing until the next:
        // it follows once an item added after it started shows (added again until one does).
        var probes = 0
        _ = try await eventually(within: .seconds(30), every: .milliseconds(200)) {
            if !watcher.lines.isEmpty { return true }
            probes += 1
            try await cli.ok(["add", "--dir", cli.path("a"), "--id", "probe\(probes)", "n=\(probes)"])
            return false
        }
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=third"])
        #expect(try await watcher.waitFor(#""value":"third""#), "\(watcher.lines)")
        let ports = freePorts(2)
        let node = try await NodeProcess(dir: cli.path("a"), port: ports[0], extra: ["--api", "127.0.0.1:\(ports[1])"])
        defer { node.stop() }
        try await cli.ok(["set", "--dir", cli.path("a"), "t1", "title=fourth"])
        #expect(try await watcher.waitFor(#""value":"fourth""#), "\(watcher.lines)")
        #expect(!watcher.lines.contains { $0.contains(#""value":"second""#) }, "it started after what was there")
        let bad = try await cli.run(["watch", "--dir", cli.path("a"), "--since", "abc"])
        #expect(
            bad.status != 0 && bad.stderr.hasPrefix("Error: The value 'abc' is invalid for '--since"),
            "\(bad.stderr)"
        )
    }
}
