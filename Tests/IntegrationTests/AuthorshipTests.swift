import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import Testing

/// Every claim bound to its author (issue 64), on the real binaries: what a member says about
/// another member counts only with that member's signature. The rogue is `lansync-debug
/// rogue-member`, a member with a valid certificate that says what it likes.
@Suite(.serialized) struct AuthorshipTests {
    /// A running node's id and version vector (`status --json`), read through the binary so the
    /// test runs against an older one too (opening its file here would upgrade it).
    func identity(_ cli: CLI, _ dir: String) async throws -> (node: String, vector: String) {
        let status = try await cli.status(cli.path(dir))
        guard case .string(let node)? = status["node_id"], case .object(let entries)? = status["version_vector"] else {
            throw TourTests.CLIError("no node id or vector in \(status.text)")
        }
        let vector = entries.compactMap { key, value -> String? in
            guard case .integer(let n) = value else { return nil }
            return "\(key):\(n)"
        }
        return (node, vector.joined(separator: ","))
    }

    /// The dot (writer, counter) of the last write to `item`'s field `n` (`history --json`).
    func lastDot(_ cli: CLI, _ dir: String, _ item: String) async throws -> (writer: String, counter: Int64) {
        let text = try await cli.ok(["history", "--dir", cli.path(dir), item, "--json"])
        guard case .array(let entries) = try JSON(parsing: text),
            let last = entries.last(where: { $0["field"] == .string("n") }),
            case .string(let writer)? = last["node"], case .integer(let counter)? = last["counter"]
        else { throw TourTests.CLIError("no history of \(item) on \(dir): \(text)") }
        return (writer, counter)
    }

    /// The rogue's session with the node or relay at `port`; it listens `seconds` for answers
    /// (a relay on PostgreSQL in a loaded run took longer than half a second to say hello).
    func rogue(_ cli: CLI, at port: Int, _ arguments: [String], seconds: String = "0.5") async throws -> CLI.Result {
        try await cli.run(
            ["rogue-member", "--dir", cli.path("m"), "--peer", "127.0.0.1:\(port)", "--seconds", seconds] + arguments,
            binary: CLI.debugBinary
        )
    }

    /// The scenario (its trash window of a minute shortened to 20 s): b restores item t
    /// offline after a deleted it; 45 s after the delete (past the window and its clock
    /// margin, 20 s each) the rogue tells a and the relay, in b's name, that b has
    /// seen everything a holds (unsigned, as a 1.12 hello gossips a report, and signed with the
    /// rogue's own key). Neither takes it: neither collects t (before, a collected it, and once b
    /// came back a showed t deleted and empty, b live, for good). b comes back, and every replica
    /// shows t live with its fields.
    @Test func aReportInAnotherMembersNameLosesNoRestore() async throws {
        let cli = CLI("forged-report")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b", "m"])
        try await cli.ok(["cluster", "set", "--dir", cli.path("r"), "trash-window", "20s"])
        let p = freePorts(3)
        let collect = ["--collect-interval", "1"]
        let r = try await cli.relay(port: p[0], extra: collect)
        let a = try await NodeProcess(
            dir: cli.path("a"),
            port: p[1],
            extra: ["--relay", "127.0.0.1:\(p[0])"] + collect
        )
        var b = try await NodeProcess(
            dir: cli.path("b"),
            port: p[2],
            peers: [p[1]],
            extra: ["--relay", "127.0.0.1:\(p[0])"] + collect
        )
        defer {
            r.stop()
            a.stop()
            b.stop()
        }
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t", "n=1", "note=kept"])
        let all = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(all) != nil)
        #expect(
            try await eventually(within: .seconds(30)) {
                try await cli.ok(["cluster", "set", "--dir", cli.path("b")]).contains("trash-window 20s")
            }
        )
        let bID = try await identity(cli, "b").node
        try await cli.ok(["rm", "--dir", cli.path("a"), "t"])
        let deleted = ContinuousClock.now
        #expect(try await cli.waitForConvergence(all) != nil)
        #expect(b.stop() == 0)
        try await cli.ok(["restore", "--dir", cli.path("b"), "t"])

        // Past the window and its clock margin: only b's word holds t back.
        // A sleep: the time that must pass is the one the nodes measure (the delete's age against
        // the trash window and its clock margin); no event marks it.
        try await Task.sleep(until: deleted + .seconds(45))
        let held = try await identity(cli, "a").vector
        var roundsBefore: [String: Int64] = [:]
        for dir in ["a", "r"] { roundsBefore[dir] = try await CollectionTests().figure(cli, dir, "rounds") ?? 0 }
        for port in [p[1], p[0]] {
            // The rogue is a member caught up itself (its own hello holds what a holds), as the
            // issue's third member was: only b's word holds t back.
            let answer = try await rogue(
                cli,
                at: port,
                ["--forge-report", bID, "--forge-seen", held, "--hello-vector", held]
            )
            #expect(answer.stdout.contains("hello"), "the rogue's session: \(answer.stdout)\(answer.stderr)")
        }
        // Collection rounds, one a second (a 1.12 node collected t within a few): ten after the
        // forged reports, on each.
        for dir in ["a", "r"] {
            let finished = try await eventually {
                try await CollectionTests().figure(cli, dir, "rounds") ?? 0 >= (roundsBefore[dir] ?? 0) + 10
            }
            #expect(finished, "\(dir) ran ten collection rounds")
        }
        for dir in ["a", "r"] {
            #expect(
                try await CollectionTests().figure(cli, dir, "collected_items") == 0,
                "\(dir) collected t on a report in b's name"
            )
        }

        b = try await NodeProcess(
            dir: cli.path("b"),
            port: p[2],
            peers: [p[1]],
            extra: ["--relay", "127.0.0.1:\(p[0])"] + collect
        )
        #expect(try await cli.waitForConvergence(all) != nil)
        for dir in all {
            let t = try JSON(parsing: try await cli.ok(["get", "--dir", dir, "t", "--json"]))
            #expect(t["deleted"] == .bool(false), "\(dir): \(t)")
            #expect(t["fields"]?["note"] == .string("kept"), "\(dir): \(t)")
        }
        #expect(r.isRunning && a.isRunning)
    }

    /// The same report in b's name, sent to a relay on PostgreSQL: the relay keeps what b itself
    /// told it (its member row is unchanged), and a member that syncs with it afterwards
    /// converges.
    @Test func aReportInAnotherMembersNameNeverReachesTheRelayOnPostgreSQL() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("forged-report-pg")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b", "m"])
        let p = freePorts(3)
        let relay = try await cli.relay(
            port: p[0],
            name: "r1",
            extra: ["--store", server.uri, "--authority", server.uri]
        )
        defer { relay.stop() }
        let a = try await cli.node("a", port: p[1], relays: [p[0]])
        defer { a.stop() }
        let b = try await cli.node("b", port: p[2], relays: [p[0]])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "t", "n=1"])
        #expect(try await cli.waitForConvergence(["r1", "a", "b"].map(cli.path)) != nil)
        let bID = try await identity(cli, "b").node
        #expect(b.stop() == 0)
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        let row = "SELECT seen_at, encode(seen, 'hex') FROM \(schema).member WHERE node_id = '\(bID)'"
        // The relay saves what its sessions learnt now and then: wait until b's row is there.
        #expect(try await eventually(within: .seconds(30)) { try !server.sql(row).isEmpty })
        let before = try server.sql(row)
        let claim = try await identity(cli, "a").vector + ",\(bID):1000"
        let asked = WallClock.milliseconds
        let answer = try await rogue(cli, at: p[0], ["--forge-report", bID, "--forge-seen", claim], seconds: "5")
        #expect(answer.stdout.contains("hello"), "the rogue's session: \(answer.stdout)\(answer.stderr)")
        // The relay took in the rogue's hello: it keeps the rogue's own report (its member row)
        // in the step that weighs the reports the hello carries, the one in b's name among them.
        let rogueID = try Self.sqlite(cli.path("m/replica.sqlite"), "SELECT value FROM meta WHERE key = 'node_id'")
        let rogueRow = "SELECT seen_at FROM \(schema).member WHERE node_id = '\(rogueID)'"
        _ = try await eventually { try (server.sql(rogueRow).first.flatMap { UInt64($0) } ?? 0) >= asked }
        #expect(try server.sql(row) == before, "the relay took the report in b's name")
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "after", "n=2"])
        #expect(try await cli.waitForConvergence(["r1", "a"].map(cli.path)) != nil)
        #expect(relay.isRunning)
    }

    /// 10 hellos, each claiming one more write of the attacked replica's current writer than it
    /// holds, with an edit between them: the writer stays (before, each claim retired it and the
    /// next edit took a new one: the issue saw 1 writer to 31 in 30 rounds, kept for good). 30 claims to a relay on
    /// SQLite and one on PostgreSQL retire nothing either. A true witness, a peer passing back
    /// what the replica itself signed, still does: `RollbackTests` and `RestoreTests`.
    @Test func aMadeUpWitnessRetiresNoWriter() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("forged-witness")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "r1", "a", "m"])
        let p = freePorts(3)
        let a = try await NodeProcess(dir: cli.path("a"), port: p[0])
        let r = try await cli.relay(port: p[1])
        let r1 = try await cli.relay(port: p[2], name: "r1", extra: ["--store", server.uri, "--authority", server.uri])
        defer {
            a.stop()
            r.stop()
            r1.stop()
        }
        // The first edit of a node started afresh takes its writer (no marker of this boot).
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "first", "n=0"])
        let first = try await lastDot(cli, "a", "first")
        var writers: Set<String> = [first.writer]
        for round in 0..<10 {
            // One more write of a's current writer than a holds: its last edit's dot, plus one.
            let last = try await lastDot(cli, "a", round == 0 ? "first" : "edit\(round - 1)")
            let answer = try await rogue(cli, at: p[0], ["--hello-vector", "\(last.writer):\(last.counter + 1)"])
            #expect(answer.stdout.contains("hello"), "\(answer.stdout)\(answer.stderr)")
            try await cli.ok(["add", "--dir", cli.path("a"), "--id", "edit\(round)", "n=\(round)"])
            writers.insert(try await lastDot(cli, "a", "edit\(round)").writer)
        }
        #expect(writers.count == 1, "a took \(writers.count - 1) new writers on made-up claims")

        try await cli.ok(["add", "--dir", cli.path("r"), "--id", "relay-first", "n=0"])
        let relayFirst = try await lastDot(cli, "r", "relay-first")
        let answer = try await rogue(
            cli,
            at: p[1],
            ["--hello-vector", "\(relayFirst.writer):\(relayFirst.counter + 1)", "--hellos", "30"]
        )
        #expect(answer.stdout.contains("hello"), "\(answer.stdout)\(answer.stderr)")
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        let pgWriter = try server.sql("SELECT value FROM \(schema).meta WHERE key = 'writer_id'").first ?? ""
        let pgAnswer = try await rogue(cli, at: p[2], ["--hello-vector", "\(pgWriter):1", "--hellos", "30"])
        #expect(pgAnswer.stdout.contains("hello"), "\(pgAnswer.stdout)\(pgAnswer.stderr)")
        // Both relays took in the last of the rogue's hellos: each keeps the rogue's own report, the
        // vector its hello claimed, once it has weighed the claim. The 30th hello claims 29 writes
        // more than the first: relay-first's counter plus 30 on SQLite, 30 on PostgreSQL.
        let rogueID = try Self.sqlite(cli.path("m/replica.sqlite"), "SELECT value FROM meta WHERE key = 'node_id'")
        let onSQLite = "SELECT hex(seen) FROM member WHERE node_id = '\(rogueID)'"
        let onPostgreSQL = "SELECT encode(seen, 'hex') FROM \(schema).member WHERE node_id = '\(rogueID)'"
        _ = try await eventually {
            let sqlite = try Self.sqlite(cli.path("r") + "/replica.sqlite", onSQLite)
            let postgres = try server.sql(onPostgreSQL).first ?? ""
            return Self.counter(of: relayFirst.writer, inHex: sqlite) == UInt64(relayFirst.counter) + 30
                && Self.counter(of: pgWriter, inHex: postgres) == 30
        }
        // The next local write of the relay on SQLite keeps its writer.
        try await cli.ok(["add", "--dir", cli.path("r"), "--id", "relay-edit", "n=1"])
        #expect(try await lastDot(cli, "r", "relay-edit").writer == relayFirst.writer)
        let retired = try server.sql("SELECT value FROM \(schema).meta WHERE key = 'writer_retired'").first
        #expect(retired != "1", "the relay on PostgreSQL retired its writer on a made-up claim")
        #expect(a.isRunning && r.isRunning && r1.isRunning)
    }

    /// A member that only receives passes its progress on, signed, once its session is quiet: b
    /// never writes, and the relay (the only member b meets) comes to hold b's own report
    /// covering a's write, to pass on (a member's own signature is the only report of it taken
    /// second-hand; without these reports b looked behind and collection waited for it).
    @Test func aMemberThatOnlyReceivesPassesItsProgressOn() async throws {
        let cli = CLI("progress-report")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a", "b"])
        let p = freePorts(3)
        let relay = try await cli.relay(port: p[0])
        let quick = ["--relay", "127.0.0.1:\(p[0])", "--no-gossip", "--anti-entropy", "1"]
        let a = try await NodeProcess(dir: cli.path("a"), port: p[1], extra: quick)
        let b = try await NodeProcess(dir: cli.path("b"), port: p[2], extra: quick)
        defer {
            b.stop()
            a.stop()
            relay.stop()
        }
        let all = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(all) != nil)
        let bID = try await identity(cli, "b").node
        let written = WallClock.milliseconds
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "x", "n=1"])
        #expect(try await cli.waitForConvergence(all) != nil)
        let row = "SELECT coalesce(signed_at, 0) FROM member WHERE node_id = '\(bID)'"
        var signedAt: UInt64 = 0
        let reported = try await eventually(within: .seconds(40)) {
            signedAt = UInt64(try Self.sqlite(cli.path("r") + "/replica.sqlite", row)) ?? 0
            return signedAt >= written
        }
        #expect(reported, "the relay holds b's signed report as of \(signedAt), the write was at \(written)")
        #expect(try await identity(cli, "b").vector.split(separator: ",").count == 1, "b wrote nothing")
    }

    /// `writer`'s counter in a version vector stored as bytes, given in hex (a member row's
    /// `seen`); nil for no row.
    static func counter(of writer: String, inHex hex: String) -> UInt64? {
        guard !hex.isEmpty, let node = NodeID(text: writer) else { return nil }
        var bytes: [UInt8] = []
        var digits = Substring(hex)
        while digits.count >= 2 {
            guard let byte = UInt8(digits.prefix(2), radix: 16) else { return nil }
            bytes.append(byte)
            digits = digits.dropFirst(2)
        }
        var reader = ByteReader(bytes)
        return (try? reader.versionVector())?[node]
    }

    /// One value from a replica in use, read with the sqlite3 shell (WAL: a reader beside the node).
    static func sqlite(_ file: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [file, sql]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
