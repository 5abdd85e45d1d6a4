import Foundation
import LansyncCore
import LansyncJSON
import Subprocess
import Testing

/// Bad input gets one clear line on stderr, a non-zero exit, and leaves the replica untouched.
@Suite(.serialized) struct BadInputTests {
    /// Everything a replica holds that an edit could change: items, history, version vector.
    static func snapshot(_ cli: CLI, _ dir: String) throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [
            dir + "/replica.sqlite",
            "SELECT * FROM node; SELECT * FROM item; SELECT id, item, name, conflict, hex(state) FROM field; SELECT * FROM history; SELECT * FROM version; SELECT * FROM meta;",
        ]
        process.standardOutput = pipe
        try process.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: out, as: UTF8.self)
    }

    func expectRefused(
        _ cli: CLI,
        _ args: [String],
        input: String? = nil,
        environment: [String: String] = [:],
        mentions: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let dir = cli.path("a")
        let before = try Self.snapshot(cli, dir)
        let result = try await cli.run(args, input: input, environment: environment)
        #expect(result.status != 0, "lansync \(args.prefix(3)) should fail", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line on stderr, got: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(
            result.stderr.contains(mentions),
            "stderr '\(result.stderr)' should mention '\(mentions)'",
            sourceLocation: sourceLocation
        )
        #expect(try Self.snapshot(cli, dir) == before, "the replica changed", sourceLocation: sourceLocation)
    }

    @Test func everyRefusalLeavesTheReplicaUntouched() async throws {
        let cli = CLI("bad")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        try await cli.ok(["add"] + d + ["--id", "x", "--type", "task", "title=Climb", #"tags=["a"]"#])
        try await cli.ok(["add"] + d + ["--id", "gone", "k=1"])
        try await cli.ok(["rm"] + d + ["gone"])

        try await expectRefused(cli, ["set"] + d + ["nope", "k=1"], mentions: "no item with id nope")
        try await expectRefused(cli, ["get"] + d + ["nope"], mentions: "no item with id nope")
        try await expectRefused(cli, ["rm"] + d + ["nope"], mentions: "no item with id nope")
        try await expectRefused(cli, ["history"] + d + ["nope"], mentions: "no item with id nope")
        try await expectRefused(cli, ["set"] + d + ["x", "title"], mentions: "is not an assignment")
        try await expectRefused(cli, ["set"] + d + ["x", "=v"], mentions: "invalid field name")
        try await expectRefused(cli, ["set"] + d + ["x", "_type=note"], mentions: "reserved")
        try await expectRefused(cli, ["set"] + d + ["x", "k=1", "title+=x"], mentions: "not a list")
        try await expectRefused(cli, ["set"] + d + ["x"], mentions: "nothing to change")
        try await expectRefused(cli, ["set"] + d + ["gone", "k=2"], mentions: "is deleted")
        try await expectRefused(cli, ["rm"] + d + ["gone"], mentions: "is deleted")
        try await expectRefused(cli, ["restore"] + d + ["x"], mentions: "is not deleted")
        try await expectRefused(cli, ["resolve"] + d + ["x", "title", "v"], mentions: "no open conflict")
        try await expectRefused(cli, ["add"] + d + ["--id", "x", "k=1"], mentions: "already exists")
        try await expectRefused(cli, ["add"] + d + ["--id", "bad id", "k=1"], mentions: "invalid item id")
        try await expectRefused(cli, ["add"] + d + ["--type", "", "k=1"], mentions: "invalid type")
        try await expectRefused(
            cli,
            ["relay"] + d + ["--listen", "127.0.0.1:0", "--authority", "postgres://keeper@127.0.0.1:1/relays"],
            environment: ["PGPASSFILE": cli.path("no-such-pgpass")],
            mentions: "PGPASSFILE names"
        )
        let big = #"{"id":"big","fields":{"v":""# + String(repeating: "x", count: Limits.maxValueBytes) + #""}}"#
        try await expectRefused(cli, ["import"] + d, input: big, mentions: "over the limit")
        try await expectRefused(cli, ["import"] + d, input: "{\"id\":\"n1\"}\n{oops\n", mentions: "line 2")
        try await expectRefused(
            cli,
            ["import"] + d,
            input: #"{"id":"n1","feilds":{}}"#,
            mentions: "unknown key 'feilds'"
        )
        try await expectRefused(cli, ["import"] + d, input: #"{"fields":{"a":{"b":1}}}"#, mentions: "holds an object")
        // One value rule for the CLI and import: an object is refused everywhere, nested too.
        try await expectRefused(
            cli,
            ["set"] + d + ["x", #"obj={"a":1}"#],
            mentions: "a JSON object is not a field value"
        )
        try await expectRefused(cli, ["add"] + d + [#"l=[1,{"a":1}]"#], mentions: "a JSON object is not a field value")
        // Quoted, it is text; and text that is not JSON stays text.
        try await cli.ok(["set"] + d + ["x", #"obj="{\"a\":1}""#, "brace={not json"])
        let x = try await cli.ok(["get"] + d + ["x", "--json"])
        #expect(x.contains(#""obj":"{\"a\":1}""#) && x.contains(#""brace":"{not json""#), "\(x)")
    }

    @Test func missingCorruptAndForeignReplicasAreRefused() async throws {
        let cli = CLI("files")
        defer { cli.cleanUp() }
        let missing = try await cli.run(["list", "--dir", cli.path("nothing")])
        #expect(
            missing.status != 0 && missing.stderr.contains("holds no lansync replica")
                && missing.stderr.split(separator: "\n").count == 1
        )

        try FileManager.default.createDirectory(atPath: cli.path("garbage"), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: cli.path("garbage/replica.sqlite"),
            contents: Data(repeating: 7, count: 4096)
        )
        let garbage = try await cli.run(["list", "--dir", cli.path("garbage")])
        #expect(garbage.status != 0 && garbage.stderr.contains("not a lansync replica (not a SQLite database)"))
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: cli.path("garbage/replica.sqlite")))
                == Data(repeating: 7, count: 4096)
        )

        try FileManager.default.createDirectory(atPath: cli.path("foreign"), withIntermediateDirectories: true)
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [cli.path("foreign/replica.sqlite"), "CREATE TABLE notes(x);"]
        try sqlite.run()
        sqlite.waitUntilExit()
        let foreign = try await cli.run(["add", "--dir", cli.path("foreign"), "k=1"])
        #expect(foreign.status != 0 && foreign.stderr.contains("a SQLite database of another program"))

        let badSecret = cli.path("not-a-secret.pem")
        _ = FileManager.default.createFile(atPath: badSecret, contents: Data("hello".utf8))
        let initBad = try await cli.run(["init", "--dir", cli.path("b"), "--cluster", badSecret])
        #expect(initBad.status != 0 && initBad.stderr.contains("not a lansync cluster secret"))
        #expect(!FileManager.default.fileExists(atPath: cli.path("b/replica.sqlite")))
    }

    /// Issue 12's smaller defects: values that used to be changed silently are refused.
    @Test func valuesAreNeverSilentlyChanged() async throws {
        let cli = CLI("silent")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        try await cli.ok(["add"] + d + ["--id", "x", "k=1"])
        try await cli.ok(["add"] + d + ["--id", "gone", "k=1"])
        try await cli.ok(["rm"] + d + ["gone"])
        try await expectRefused(cli, ["set"] + d + ["x", "n=99999999999999999999"], mentions: "integer out of range")
        try await expectRefused(cli, ["set"] + d + ["x", "n=1e999"], mentions: "out of range for a double")
        try await expectRefused(
            cli,
            ["set"] + d + ["x", "n=[1, -99999999999999999999]"],
            mentions: "integer out of range"
        )
        try await expectRefused(
            cli,
            ["import"] + d,
            input: #"{"id":"x","fields":{"n":99999999999999999999}}"#,
            mentions: "integer out of range"
        )
        // An import line that says nothing of deletion used to restore a deleted item.
        try await expectRefused(cli, ["import"] + d, input: #"{"id":"gone","fields":{"k":2}}"#, mentions: "is deleted")
        try await cli.ok(["import"] + d, input: #"{"id":"gone","fields":{"k":2},"deleted":false}"#)
        #expect(try await cli.ok(["get"] + d + ["gone", "--json"]).contains(#""deleted":false"#))
        // What is in range still works, and non-finite doubles written out stay allowed.
        try await cli.ok(["set"] + d + ["x", "a=1e20", "b=-9223372036854775808", "c=Infinity"])
        #expect(
            try await cli.ok(["get"] + d + ["x", "--json"]).contains(
                #""a":1e+20,"b":-9223372036854775808,"c":Infinity"#
            )
        )
    }

    /// Invalid UTF-8 cannot be typed into Swift source as a String: this one builds the bytes.
    @Test func invalidUTF8ArgumentsAreRefused() async throws {
        let cli = CLI("utf8")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let before = try Self.snapshot(cli, cli.path("a"))
        let process = Process()
        let errors = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // printf makes the byte 0xFF; the shell passes it through untouched.
        process.arguments = ["-c", #"exec "$0" add --dir "$1" "t=a$(printf '\377')b""#, CLI.binary, cli.path("a")]
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 1)
        #expect(stderr.contains("not valid UTF-8") && stderr.split(separator: "\n").count == 1, "\(stderr)")
        #expect(try Self.snapshot(cli, cli.path("a")) == before)
    }

    /// Clocks far off: a machine days behind syncs (certificates are valid from 2000), and one set
    /// past the year 6429 edits without crashing (its clock is clamped).
    @Test func farOffClocksStillWork() async throws {
        let cli = CLI("clocks")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: cli.path("a"), port: port)
        defer { node.stop() }
        /// Runs lansync under libfaketime: `time` is faketime's own arguments.
        func faked(_ time: [String], _ args: [String]) async throws -> CLI.Result {
            let result = try await Subprocess.run(
                .name("faketime"),
                arguments: Arguments(time + [CLI.binary] + args),
                environment: .inherit.updating(["HOME": cli.root, "LANSYNC_DIR": nil]),
                output: .string(limit: 1 << 20),
                error: .string(limit: 1 << 20)
            )
            let status: Int32 = if case .exited(let code) = result.terminationStatus { code } else { 128 }
            return CLI.Result(status: status, stdout: result.standardOutput, stderr: result.standardError)
        }
        let behind = try await faked(["-f", "-3d"], ["add", "--dir", cli.path("b"), "--id", "behind", "v=1"])
        #expect(behind.succeeded, "\(behind.stderr)")
        let sync = try await faked(["-f", "-3d"], ["sync", "--dir", cli.path("b"), "--peer", "127.0.0.1:\(port)"])
        #expect(sync.succeeded, "a machine three days behind syncs: \(sync.stderr)")
        let far = try await faked(["7000-01-01 00:00:00"], ["set", "--dir", cli.path("b"), "behind", "v=2"])
        #expect(far.succeeded, "an edit in the year 7000: \(far.status) \(far.stderr)")
        #expect(try await cli.ok(["get", "--dir", cli.path("b"), "behind", "--json"]).contains(#""v":2"#))
    }
}
