import Foundation
import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

/// Issue 12: a damaged replica file is detected and contained with the real binary: no command
/// crashes, writes and the node are refused with one line saying what to do, `check` reports it,
/// and `repair` rebuilds it so that peers bring back what was lost.
@Suite(.serialized) struct DamageTests {
    /// Runs SQL on a replica with the sqlite3 shell (the tests' way to damage a file on purpose).
    static func sqlite(_ file: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [file, sql]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sqlite3 \(sql)")
    }

    /// Zeroes `count` pages of a file, starting at page `first` (4 KiB pages).
    static func zeroPages(_ file: String, first: Int, count: Int) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(first * 4096))
        try handle.write(contentsOf: Data(count: count * 4096))
    }

    /// Every command either works or fails with one line, never a crash.
    static func expectNoCrash(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            result.status < 128,
            "\(what) crashed: \(result.status) \(result.stderr)",
            sourceLocation: sourceLocation
        )
        if !result.succeeded {
            let lines = result.stderr.split(separator: "\n")
            #expect(
                lines.count == 1,
                "\(what): one line on stderr, got \(result.stderr)",
                sourceLocation: sourceLocation
            )
        }
    }

    /// Rows that do not decode (bit flips inside values, a flag of the wrong kind: the pattern that
    /// used to crash `status` and the node): refused, reported, repaired, and healed by a peer.
    @Test func damagedRowsAreRefusedReportedAndRepaired() async throws {
        let cli = CLI("damage-rows")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        let lines = (0..<30).map { #"{"id":"i\#($0)","type":"t","fields":{"n":\#($0),"title":"item \#($0)"}}"# }.joined(
            separator: "\n"
        )
        try await cli.ok(["import", "--dir", a], input: lines)
        let ports = freePorts(1)
        do {
            let nodeB = try await NodeProcess(dir: b, port: ports[0])
            try await cli.ok(["sync", "--dir", a, "--peer", "127.0.0.1:\(ports[0])"])
            nodeB.stop()
        }
        let file = a + "/replica.sqlite"
        try Self.sqlite(
            file,
            "UPDATE field SET state = X'DEADBEEF' WHERE id IN (SELECT id FROM field WHERE name = 'n' LIMIT 10)"
        )
        // A NULL where the schema allows none (what one bit flip in a record header produced):
        // loosen the column's constraint in the schema text, then write the NULL.
        try Self.sqlite(
            file,
            "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'conflict INTEGER NOT NULL', 'conflict INTEGER') WHERE name = 'field'"
        )
        try Self.sqlite(
            file,
            "UPDATE field SET conflict = NULL WHERE id = (SELECT id FROM field WHERE name = 'title' LIMIT 1)"
        )

        for command in [["list"], ["status"], ["get", "i3"], ["export"], ["conflicts"], ["history", "i0"]] {
            Self.expectNoCrash(try await cli.run(command + ["--dir", a]), command.joined(separator: " "))
        }
        let list = try await cli.run(["list", "--dir", a])
        #expect(
            !list.succeeded && list.stderr.contains("damaged") && list.stderr.contains("lansync check"),
            "\(list.stderr)"
        )
        let add = try await cli.run(["add", "--dir", a, "v=1"])
        #expect(
            !add.succeeded && add.stderr.contains("damaged"),
            "a write to a damaged replica is refused: \(add.stderr)"
        )
        let check = try await cli.run(["check", "--dir", a, "--json"])
        #expect(!check.succeeded)
        let report = try JSON(parsing: check.stdout)
        #expect(report["sound"] == .bool(false))
        guard case .array(let problems)? = report["problems"] else {
            Issue.record("no problems listed: \(check.stdout)")
            return
        }
        #expect(problems.count >= 11, "ten undecodable states and a bad flag: \(problems)")
        let node = try await NodeProcess(
            dir: a,
            port: 0,
            arguments: ["--listen", "127.0.0.1:\(freePorts(1)[0])", "--no-mdns"],
            waitForListening: false
        )
        #expect(node.process.wait() == 1, "the node refuses a damaged replica")
        #expect(node.logText.contains("does not start on a damaged replica"), "\(node.logText)")

        let repair = try await cli.ok(["repair", "--dir", a])
        print("repair: \(repair.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(
            repair.contains("10 lost"),
            "the ten undecodable states; the row with the NULL flag has a sound state and is kept: \(repair)"
        )
        #expect(try await cli.ok(["check", "--dir", a]).contains("sound"))
        // The import's signed run came through the repair: the states it kept stay provable.
        #expect(try AuthorshipTests.sqlite(file, "SELECT count(*) FROM signed_run") == "1")
        try await cli.ok(["add", "--dir", a, "--id", "after-repair", "v=1"])
        // A peer that has everything brings back what was lost.
        let nodeB = try await NodeProcess(dir: b, port: ports[0])
        defer { nodeB.stop() }
        try await cli.ok(["sync", "--dir", a, "--peer", "127.0.0.1:\(ports[0])"])
        #expect(try await cli.waitForConvergence([a, b], timeout: .seconds(20)) != nil)
        let restored = try await cli.ok(["list", "--dir", a, "--json"])
        #expect(restored.components(separatedBy: "\"id\"").count == 32, "30 items, back whole, and the new one")
        #expect(try await cli.ok(["get", "--dir", b, "after-repair", "--json"]).contains(#""v":1"#))
        // What b sent back came with its signatures: every version of a lost state is signed.
        let history = try await cli.ok(["history", "--dir", a, "i0", "--json"])
        #expect(!history.contains("\"signed\":false"), "\(history)")
    }

    /// A zeroed stretch of the file (a torn or lost write): the node refuses to start with one
    /// line, and repair keeps what still reads.
    @Test func zeroedPagesStopTheNodeAndRepairKeepsTheRest() async throws {
        let cli = CLI("damage-pages")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let a = cli.path("a")
        let lines = (0..<3000).map {
            #"{"id":"i\#($0)","type":"t","fields":{"title":"a title long enough to fill some pages \#($0)"}}"#
        }
        try await cli.ok(["import", "--dir", a], input: lines.joined(separator: "\n"))
        let file = a + "/replica.sqlite"
        try Self.sqlite(file, "PRAGMA wal_checkpoint(TRUNCATE)")
        let pages = Int(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0) / 4096
        try Self.zeroPages(file, first: pages / 2, count: 4)
        let node = try await NodeProcess(
            dir: a,
            port: 0,
            arguments: ["--listen", "127.0.0.1:\(freePorts(1)[0])", "--no-mdns"],
            waitForListening: false
        )
        #expect(node.process.wait() == 1)
        #expect(node.logText.contains("damaged"), "\(node.logText)")
        for command in [["list"], ["status"], ["check"], ["add", "v=1"]] {
            Self.expectNoCrash(try await cli.run(command + ["--dir", a]), command.joined(separator: " "))
        }
        let repair = try await cli.run(["repair", "--dir", a])
        Self.expectNoCrash(repair, "repair")
        print(
            "repair after zeroed pages: \(repair.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) \(repair.stderr)"
        )
        if repair.succeeded {
            #expect(try await cli.ok(["check", "--dir", a]).contains("sound"))
            try await cli.ok(["add", "--dir", a, "v=1"])
        }
    }
}
