import Foundation
import LansyncJSON
import LansyncTestSupport
import Testing

/// Roles (issue 64, Docs/SECURITY.md "Roles"), on the real binaries: `lansync members role`
/// signs what a member may do; a reader's writes are refused by every member, nodes and relays
/// on SQLite and PostgreSQL alike, and its own node refuses edits, its API too.
@Suite(.serialized) struct RoleTests {
    /// The title, the deletion and the refused writes a replica shows.
    func shows(_ cli: CLI, _ dir: String) async throws -> (title: JSON?, plantedDeleted: JSON?) {
        let shared = try JSON(parsing: try await cli.ok(["get", "--dir", cli.path(dir), "shared", "--json"]))
        let planted = try await cli.run(["get", "--dir", cli.path(dir), "planted", "--json"])
        let deleted = planted.status == 0 ? try JSON(parsing: planted.stdout)["deleted"] : nil
        return (shared["fields"]?["title"], deleted)
    }

    /// b, a member that joined with an invite, writes offline (a new title, a new item) while
    /// a, an admitting machine, makes it a reader. When b comes back, a and the relay refuse
    /// what it wrote after the cut, and b takes their overrules; b's node then refuses edits,
    /// from the CLI and from its API (403, saying why); the page's summary says why. Made a
    /// writer again, b writes under a new writer and its edits count, while what it wrote as a
    /// reader stays refused.
    @Test func aReadersWritesAreRefusedEverywhere() async throws {
        let cli = CLI("roles")
        defer { cli.cleanUp() }
        try await cli.cluster(["r", "a"])
        let p = freePorts(4)
        let r = try await cli.relay(port: p[0])
        defer { r.stop() }
        let a = try await NodeProcess(dir: cli.path("a"), port: p[1], extra: ["--relay", "127.0.0.1:\(p[0])"])
        defer { a.stop() }
        let invite = try JSON(
            parsing: try await cli.ok(["invite", "--dir", cli.path("a"), "--name", "b", "--json"])
        )
        guard case .string(let code)? = invite["code"] else {
            Issue.record("invite --json printed no code: \(invite.text)")
            return
        }
        try await cli.ok(["join", code, "--dir", cli.path("b"), "--address", "127.0.0.1:\(p[1])"])
        let bArguments = ["--relay", "127.0.0.1:\(p[0])", "--no-gossip", "--api", "127.0.0.1:\(p[3])"]
        var b = try await NodeProcess(dir: cli.path("b"), port: p[2], extra: bArguments)
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "shared", "title=from a"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "before", "title=written before"])
        let all = ["r", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(all) != nil)
        #expect(b.stop() == 0)

        try await cli.ok(["set", "--dir", cli.path("b"), "shared", "title=changed by the reader"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "planted", "title=planted"])
        // Only an admitting machine signs roles; never its own.
        let refused = try await cli.run(["members", "role", "--dir", cli.path("b"), "b", "reader"])
        #expect(refused.status != 0 && refused.stderr.contains("authority key"), "\(refused.stderr)")
        let itself = try await cli.run(["members", "role", "--dir", cli.path("a"), "a", "reader"])
        #expect(itself.status != 0 && itself.stderr.contains("this machine"), "\(itself.stderr)")
        let made = try await cli.ok(["members", "role", "--dir", cli.path("a"), "b", "reader"])
        #expect(made.contains("is a reader since"), "\(made)")
        let again = try await cli.ok(["members", "role", "--dir", cli.path("a"), "b", "reader"])
        #expect(again.contains("already"), "\(again)")

        b = try await NodeProcess(dir: cli.path("b"), port: p[2], extra: bArguments)
        defer { b.stop() }
        #expect(try await cli.waitForConvergence(all) != nil, "b: \(b.logText)")
        for dir in ["r", "a", "b"] {
            let (title, deleted) = try await shows(cli, dir)
            #expect(title == .string("from a"), "\(dir) shows \(String(describing: title))")
            #expect(deleted == .bool(true), "\(dir): planted is not in the bin")
            #expect(try await cli.ok(["get", "--dir", cli.path(dir), "before"]).contains("written before"))
        }
        let status = try await cli.status(cli.path("a"))
        guard case .array(let writes)? = status["revoked_writes"] else {
            Issue.record("no revoked_writes in a's status: \(status.text)")
            return
        }
        #expect(
            writes.contains { $0["reason"].map { "\($0)".contains("reader node") } ?? false },
            "\(status.text)"
        )
        let history = try await cli.ok(["history", "--dir", cli.path("a"), "shared", "title"])
        #expect(history.contains("refused, kept") && history.contains("reader node"), "\(history)")
        let members = try JSON(parsing: try await cli.ok(["members", "--dir", cli.path("a"), "--json"]))
        guard case .array(let list) = members, let bRow = list.first(where: { $0["name"] == .string("b") }) else {
            Issue.record("no b in \(members.text)")
            return
        }
        #expect(bRow["role"] == .string("reader"), "\(bRow.text)")
        #expect(try await cli.ok(["members", "--dir", cli.path("a")]).contains("reader"))

        // b knows it is a reader: the CLI, the API and the page refuse edits, saying why.
        let statusText = try await cli.ok(["status", "--dir", cli.path("b")])
        #expect(statusText.contains("this machine may only read (made a reader"), "\(statusText)")
        let edit = try await cli.run(["set", "--dir", cli.path("b"), "shared", "title=again"])
        #expect(edit.status != 0 && edit.stderr.contains("may only read"), "\(edit.stderr)")
        #expect(edit.stderr.split(separator: "\n").count == 1, "\(edit.stderr)")
        let token = try await cli.ok(["api-token", "--dir", cli.path("b")]).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let base = "http://127.0.0.1:\(p[3])"
        let post = UITests.request("\(base)/v1/items", method: "POST", body: #"{"fields":{"n":1}}"#, token: token)
        #expect(post.status == 403 && post.body.contains("may only read"), "\(post.status) \(post.body)")
        let summary = UITests.request("\(base)/v1/summary", token: token)
        #expect(summary.body.contains("\"read_only\":\"made a reader"), "\(summary.body)")
        #expect(try await shows(cli, "b").title == .string("from a"))

        // A writer again: b's next edit takes a new writer and reaches everyone; the planted item
        // stays in the bin.
        #expect(try await cli.ok(["members", "role", "--dir", cli.path("a"), "b", "writer"]).contains("writer"))
        #expect(
            await eventually(within: .seconds(30)) {
                (try? await cli.run(["set", "--dir", cli.path("b"), "shared", "title=b writes again"]))?.status == 0
            },
            "b: \(b.logText)"
        )
        #expect(try await cli.waitForConvergence(all) != nil)
        for dir in ["r", "a", "b"] {
            let (title, deleted) = try await shows(cli, dir)
            #expect(title == .string("b writes again"), "\(dir) shows \(String(describing: title))")
            #expect(deleted == .bool(true), "\(dir): planted came back")
        }
        let after = UITests.request("\(base)/v1/summary", token: token)
        #expect(after.body.contains("\"read_only\":null"), "\(after.body)")
        #expect(r.isRunning && a.isRunning && b.isRunning)
    }

    /// The same reader's offline write reaching a relay on PostgreSQL: refused there too, and the
    /// members that sync with the relay converge on the refusal.
    @Test func aRelayOnPostgreSQLRefusesAReadersWrites() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let cli = CLI("roles-pg")
        defer { cli.cleanUp() }
        try await cli.cluster(["r1", "a", "b"])
        let p = freePorts(3)
        let relay = try await cli.relay(
            port: p[0],
            name: "r1",
            extra: ["--store", server.uri, "--authority", server.uri]
        )
        defer { relay.stop() }
        let a = try await cli.node("a", port: p[1], relays: [p[0]])
        defer { a.stop() }
        var b = try await cli.node("b", port: p[2], relays: [p[0]])
        try await cli.ok(["add", "--dir", cli.path("a"), "--id", "shared", "title=from a"])
        let all = ["r1", "a", "b"].map(cli.path)
        #expect(try await cli.waitForConvergence(all) != nil)
        try await cli.ok(["cluster", "admitters", "--dir", cli.path("a"), "a", "r1"])
        // b took the set of admitting machines, and with it gave up the authority's key.
        #expect(
            await eventually(within: .seconds(20)) {
                !((try? String(contentsOfFile: cli.path("b/cluster.pem"), encoding: .utf8)) ?? "").contains("PRIVATE")
            }
        )
        guard case .string(let bID)? = try await cli.status(cli.path("b"))["node_id"] else {
            Issue.record("no node id in b's status")
            return
        }
        #expect(b.stop() == 0)
        try await cli.ok(["set", "--dir", cli.path("b"), "shared", "title=changed by the reader"])
        try await cli.ok(["add", "--dir", cli.path("b"), "--id", "planted", "title=planted"])
        // a never met b (a star through the relay): b is named by its node id.
        try await cli.ok(["members", "role", "--dir", cli.path("a"), bID, "reader"])
        let schema = try server.sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lansync_%'").first ?? "none"
        // The relay learns the role from a before b comes back.
        #expect(
            try await eventually(within: .seconds(30)) {
                try !server.sql("SELECT 1 FROM \(schema).statement WHERE substr(record, 1, 1) = '\\x06'").isEmpty
            }
        )
        b = try await cli.node("b", port: p[2], relays: [p[0]])
        defer { b.stop() }
        #expect(try await cli.waitForConvergence(all) != nil, "b: \(b.logText)")
        for dir in ["a", "b"] {
            let (title, deleted) = try await shows(cli, dir)
            #expect(title == .string("from a"), "\(dir) shows \(String(describing: title))")
            #expect(deleted == .bool(true), "\(dir): planted is not in the bin")
        }
        // The relay refused them itself (a meets no one else).
        #expect(try server.sql("SELECT deleted FROM \(schema).item WHERE item_id = 'planted'") == ["t"])
        let reasons = try server.sql("SELECT reason FROM \(schema).rejection WHERE item_id = 'shared'")
        #expect(reasons.contains { $0.contains("reader node \(bID.prefix(7))") }, "\(reasons)")
        // An admitter is a writer the set names: the set follows the role.
        let admitter = try await cli.ok(["members", "role", "--dir", cli.path("a"), bID, "admitter"])
        #expect(admitter.contains("admitting machines are now"), "\(admitter)")
        #expect(relay.isRunning && a.isRunning && b.isRunning)
    }
}
