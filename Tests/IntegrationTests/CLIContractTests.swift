import Foundation
import LansyncCore
import LansyncJSON
import Testing

/// The CLI contract of issue 3, checked against the real binary.
@Suite(.serialized) struct CLIContractTests {
    @Test func clusterSecretIsPrivateAndNeverOverwritten() async throws {
        let cli = CLI("secret")
        defer { cli.cleanUp() }
        try await cli.ok(["cluster", "create", cli.path("s.pem")])
        let mode = try FileManager.default.attributesOfItem(atPath: cli.path("s.pem"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let before = try String(contentsOfFile: cli.path("s.pem"), encoding: .utf8)
        let again = try await cli.run(["cluster", "create", cli.path("s.pem")])
        #expect(again.status != 0 && again.stderr.contains("already exists"))
        #expect(try String(contentsOfFile: cli.path("s.pem"), encoding: .utf8) == before)
    }

    @Test func initRefusesTwiceAndDirectoryResolves() async throws {
        let cli = CLI("init")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let twice = try await cli.run(["init", "--dir", cli.path("a"), "--cluster", cli.path("cluster.pem")])
        #expect(twice.status != 0 && twice.stderr.contains("already holds a lansync replica"))
        // $LANSYNC_DIR, then ~/.lansync.
        let viaEnv = try await cli.run(["add", "k=1"], environment: ["LANSYNC_DIR": cli.path("a")])
        #expect(viaEnv.succeeded)
        let listed = try await cli.ok(["list", "--dir", cli.path("a"), "--json"])
        #expect(listed.contains(viaEnv.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        // --dir before the subcommand too, as `git -C`: the same answer.
        #expect(try await cli.ok(["--dir", cli.path("a"), "list", "--json"]) == listed)
        #expect(try await cli.ok(["--dir=\(cli.path("a"))", "list", "--json"]) == listed)
        try await cli.ok(["init", "--cluster", cli.path("cluster.pem")])
        #expect(FileManager.default.fileExists(atPath: cli.path(".lansync/replica.sqlite")))
        let mode =
            try FileManager.default.attributesOfItem(atPath: cli.path(".lansync/node.pem"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// Commands that take an id take a unique start of one, as git takes a commit's; a start of
    /// several ids is refused naming them, and an exact id wins over longer ones it starts.
    @Test func aUniqueIdPrefixNamesTheItem() async throws {
        let cli = CLI("prefix")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let dir = cli.path("a")
        for id in ["abc", "abc1", "abc2", "xyz"] { try await cli.ok(["add", "--dir", dir, "--id", id, "n=1"]) }
        try await cli.ok(["set", "--dir", dir, "xy", "n=2"])
        #expect(try await cli.ok(["get", "--dir", dir, "xyz", "--json"]).contains(#""n":2"#))
        #expect(try await cli.ok(["get", "--dir", dir, "x", "--json"]).contains(#""id":"xyz""#))
        #expect(try await cli.ok(["get", "--dir", dir, "abc", "--json"]).contains(#""id":"abc""#))
        let before = try await cli.ok(["list", "--dir", dir, "--json"])
        let ambiguous = try await cli.run(["set", "--dir", dir, "ab", "n=3"])
        #expect(ambiguous.status == 1)
        #expect(
            ambiguous.stderr.contains("'ab' is the start of several item ids (abc, abc1, abc2)"),
            "\(ambiguous.stderr)"
        )
        #expect(try await cli.ok(["list", "--dir", dir, "--json"]) == before, "a refused edit changed nothing")
        let unknown = try await cli.run(["get", "--dir", dir, "q"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no item with id q"))
        try await cli.ok(["rm", "--dir", dir, "abc2"])
        try await cli.ok(["restore", "--dir", dir, "abc2"])
        #expect(try await cli.ok(["history", "--dir", dir, "xy", "--json"]).contains("\"n\""))
    }

    /// Commands that report something say it as JSON with --json: add and set the item as
    /// `get --json` prints it, import its summary, sync one object per peer (a failure too).
    @Test func reportingCommandsSpeakJSON() async throws {
        let cli = CLI("json")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let dir = cli.path("a")
        let added = try JSON(parsing: try await cli.ok(["add", "--dir", dir, "--id", "j1", "title=Climb", "--json"]))
        #expect(added["id"] == .string("j1"))
        #expect(added["fields"]?["title"] == .string("Climb"))
        let set = try JSON(parsing: try await cli.ok(["set", "--dir", dir, "j1", "n=2", "--json"]))
        #expect(set["fields"]?["n"] == .integer(2))
        #expect(try await cli.ok(["get", "--dir", dir, "j1", "--json"]) == set.text + "\n")
        let imported = try JSON(
            parsing: try await cli.ok(
                ["import", "--dir", dir, "--json"],
                input: #"{"id":"j2","fields":{"k":1}}"# + "\n"
            )
        )
        #expect(imported["lines"] == .integer(1) && imported["edits"] == .integer(1))
        let sync = try await cli.run(["sync", "--dir", dir, "--peer", "127.0.0.1:1", "--json"])
        #expect(sync.status == 1)
        guard case .array(let peers) = try JSON(parsing: sync.stdout), let first = peers.first else {
            Issue.record("sync --json printed no array: \(sync.stdout)")
            return
        }
        #expect(first["peer"] == .string("127.0.0.1:1") && first["ok"] == .bool(false))
        #expect(sync.stderr.contains("connection refused"))
    }

    @Test func addSetGetListFollowTheContract() async throws {
        let cli = CLI("edit")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        let id = try await cli.ok(
            ["add"] + d + [
                "--type", "task", "title=Climb", "n=3", "x=2.5", "flag=true", "none=null", #"q="42""#,
                #"tags=["climbing"]"#, "plain=hello world",
            ]
        )
        .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 36 && Array(id)[14] == "7", "a UUIDv7: \(id)")
        try await cli.ok(["set"] + d + [id, "tags+=reading", "tags+=karaoke", "tags-=climbing", "n=4"])
        let json = try await cli.ok(["get"] + d + [id, "--json"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            json
                == #"{"id":"\#(id)","type":"task","fields":{"flag":true,"n":4,"none":null,"plain":"hello world","q":"42","tags":["reading","karaoke"],"title":"Climb","x":2.5},"deleted":false,"conflicts":[],"sync":{"state":"DIRTY","peers":[]}}"#
        )

        try await cli.ok(["add"] + d + ["--id", "b-note", "--type", "note", "text=hi"])
        try await cli.ok(["add"] + d + ["--id", "a-note", "--type", "note", "text=yo"])
        let notes = try await cli.ok(["list"] + d + ["--type", "note", "--json"])
        let parsed = try JSON(parsing: notes)
        guard case .array(let items) = parsed else {
            Issue.record("not an array: \(notes)")
            return
        }
        #expect(items.compactMap { $0["id"] } == [.string("a-note"), .string("b-note")])

        try await cli.ok(["rm"] + d + ["a-note"])
        let live = try await cli.ok(["list"] + d + ["--json"])
        #expect(!live.contains("a-note"))
        let all = try await cli.ok(["list"] + d + ["--deleted", "--json"])
        #expect(all.contains(#""id":"a-note","type":"note","fields":{"text":"yo"},"deleted":true"#))
        try await cli.ok(["restore"] + d + ["a-note"])
        #expect(try await cli.ok(["list"] + d + ["--json"]).contains("a-note"))

        // Human output fits the terminal's width (COLUMNS stands for it: output to a pipe is never cut).
        for command in [["list"], ["get", id], ["history", id], ["conflicts"]] {
            let result = try await cli.run(command + d, environment: ["COLUMNS": "80"])
            #expect(result.succeeded, "\(command): \(result.stderr)")
            for line in result.stdout.split(separator: "\n") { #expect(line.count <= 80, "\(command): \(line)") }
        }
    }

    /// `list` puts the title first and fits the terminal; `--fields` chooses the columns, `--wide`
    /// and output to a pipe cut nothing.
    @Test func listShowsTheTitleFirstAndFitsTheTerminal() async throws {
        let cli = CLI("list-width")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        let long = String(repeating: "lorem ipsum ", count: 12)
        try await cli.ok(
            ["add"] + d + [
                "--id", "t1", "--type", "task", "a=1", "b=2", "notes=\(long)", "owner=ana", "title=Climb the wall",
            ]
        )
        try await cli.ok(["add"] + d + ["--id", "t2", "--type", "task", "name=Second", "owner=bo"])
        let narrow = try await cli.run(["list"] + d, environment: ["COLUMNS": "60"])
        #expect(narrow.succeeded, "\(narrow.stderr)")
        let lines = narrow.stdout.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 60 }, "\(narrow.stdout)")
        #expect(lines.first?.contains("TITLE") == true, "\(narrow.stdout)")
        // The title (or name) is whole, ahead of the fields sorted by name.
        #expect(
            lines.contains { $0.hasPrefix("t1") && $0.contains("Climb the wall") && $0.contains("a=1") },
            "\(narrow.stdout)"
        )
        #expect(lines.contains { $0.hasPrefix("t2") && $0.contains("Second") }, "\(narrow.stdout)")
        // To a pipe, nothing is cut: no cell, no value (the notes field whole, as a field among
        // others), no line.
        let piped = try await cli.ok(["list"] + d)
        #expect(piped.contains("owner=ana") && piped.contains("notes=\(long)"), "\(piped)")
        #expect(!piped.contains("…"), "\(piped)")
        let pipedGet = try await cli.ok(["get"] + d + ["t1"])
        #expect(pipedGet.contains(long), "\(pipedGet)")
        let wide = try await cli.run(["list", "--wide"] + d, environment: ["COLUMNS": "60"])
        #expect(wide.stdout.contains(long.trimmingCharacters(in: .whitespaces)), "\(wide.stdout)")
        // A long id shows as its shortest unique start in a terminal, which every command takes.
        let uuid = try await cli.ok(["add"] + d + ["title=Third"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let shortRows = try await cli.run(["list"] + d, environment: ["COLUMNS": "60"]).stdout.split(separator: "\n")
        let third = try #require(shortRows.first { $0.contains("Third") }, "\(shortRows)")
        let start = String(third.prefix { $0 != " " })
        #expect(start.count >= 8 && start.count < uuid.count && uuid.hasPrefix(start), "\(third)")
        #expect(try await cli.ok(["get"] + d + [start, "--json"]).contains(#""title":"Third""#))
        let pipedAgain = try await cli.ok(["list"] + d)
        #expect(pipedAgain.contains(uuid), "a pipe gets whole ids")
        let chosen = try await cli.run(["list", "--fields", "owner,title"] + d, environment: ["COLUMNS": "60"])
        let chosenLines = chosen.stdout.split(separator: "\n").map(String.init)
        #expect(
            chosenLines.first?.split(separator: " ", omittingEmptySubsequences: true) == [
                "ID", "TYPE", "OWNER", "TITLE",
            ]
        )
        #expect(
            chosenLines.contains {
                $0.hasPrefix("t1") && $0.contains("ana") && $0.contains("Climb the wall") && !$0.contains("a=1")
            }
        )
        let refused = try await cli.run(["list", "--json", "--wide"] + d)
        #expect(refused.status != 0 && refused.stderr.contains("--json"), "\(refused.stderr)")
    }

    /// `revert` brings a past value back as a new edit; what is no value is refused, changing nothing.
    @Test func revertBringsAPastValueBack() async throws {
        let cli = CLI("revert")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        try await cli.ok(["add"] + d + ["--id", "r", "title=one", "tags=[\"x\",\"y\"]"])
        try await cli.ok(["set"] + d + ["r", "title=two"])
        try await cli.ok(["set"] + d + ["r", "title=three", "tags+=z"])
        // The # column numbers a field's entries, newest first.
        let history = try await cli.ok(["history"] + d + ["r", "title"])
        #expect(
            history.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first } == ["1", "2", "3"],
            "\(history)"
        )
        try await cli.ok(["revert"] + d + ["r", "title", "--to", "3"])
        #expect(try await cli.ok(["get"] + d + ["r", "--json"]).contains(#""title":"one""#))
        // The value a field shows already is no change: no new version, and it says so.
        let same = try await cli.ok(["revert"] + d + ["r", "title", "--to", "1"])
        #expect(same.contains("nothing was changed"), "\(same)")
        let count = try await cli.ok(["history"] + d + ["r", "title"]).split(separator: "\n").count
        #expect(count == 5, "a header and four versions: \(count)")
        // By version, as history --json names it: "two" was this node's second write.
        let entries = try JSON(parsing: try await cli.ok(["history"] + d + ["r", "title", "--json"]))
        guard case .array(let all) = entries, let two = all.first(where: { $0["write"]?["set"] == .string("two") }),
            case .string(let node)? = two["node"], case .integer(let counter)? = two["counter"]
        else {
            Issue.record("\(entries)")
            return
        }
        let item = try await cli.ok(["revert"] + d + ["r", "title", "--to", "\(node.prefix(6)):\(counter)", "--json"])
        #expect(item.contains(#""title":"two""#), "\(item)")
        // A list comes back whole from a write that replaced it.
        try await cli.ok(["revert"] + d + ["r", "tags", "--to", "2"])
        #expect(try await cli.ok(["get"] + d + ["r", "--json"]).contains(#""tags":["x","y"]"#))
        // An addition is no value; an entry that is not there is named: nothing changes.
        let before = try await cli.ok(["export"] + d)
        for (args, words) in [
            (["r", "tags", "--to", "2"], "added or removed"), (["r", "title", "--to", "9"], "no entry 9"),
            (["r", "title", "--to", "zz:1"], "no entry"), (["r", "nope", "--to", "1"], "no field"),
        ] {
            // tags entry 2 is now the addition of z (the revert above is entry 1).
            let refused = try await cli.run(["revert"] + d + args)
            #expect(refused.status != 0 && refused.stderr.contains(words), "\(args): \(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        }
        #expect(try await cli.ok(["export"] + d) == before)
    }

    /// `set --type` changes an item's type in the same edit as its fields (one dot); `history`
    /// shows the type's writes and `revert ID _type` brings one back; concurrent type changes on
    /// two machines are a conflict both show, settled with `resolve ID _type`.
    @Test func setTypeRetypesAndTypesConflictLikeFields() async throws {
        let cli = CLI("retype")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        try await cli.ok(["add", "--dir", a, "--id", "r", "--type", "task", "title=Climb"])
        let item = try JSON(
            parsing: try await cli.ok(["set", "--dir", a, "r", "--type", "note", "title=Climbed", "--json"])
        )
        #expect(item["type"] == .string("note") && item["fields"]?["title"] == .string("Climbed"), "\(item)")
        guard case .array(let entries) = try JSON(parsing: try await cli.ok(["history", "--dir", a, "r", "--json"]))
        else {
            Issue.record("history --json is no array")
            return
        }
        let newest = entries.filter { $0["live"] == .bool(true) }
        #expect(Set(newest.compactMap { $0["field"] }) == [.string("_type"), .string("title")], "\(entries)")
        #expect(Set(newest.map { [$0["node"], $0["counter"]] }).count == 1, "one edit, one dot: \(newest)")
        try await cli.ok(["revert", "--dir", a, "r", "_type", "--to", "2"])
        #expect(try JSON(parsing: try await cli.ok(["get", "--dir", a, "r", "--json"]))["type"] == .string("task"))
        let refused = try await cli.run(["set", "--dir", a, "r", "--type", ""])
        #expect(refused.status == 1 && refused.stderr.contains("invalid type"), "\(refused.stderr)")

        // Concurrent type changes: a conflict on both machines, settled like any field.
        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: b, port: port)
        defer { node.stop() }
        let sync = ["sync", "--dir", a, "--peer", "127.0.0.1:\(port)"]
        try await cli.ok(sync)
        try await cli.ok(["set", "--dir", a, "r", "--type", "chore"])
        try await cli.ok(["set", "--dir", b, "r", "--type", "errand"])
        try await cli.ok(sync)
        for dir in [a, b] {
            let conflicts = try await cli.ok(["conflicts", "--dir", dir, "--json"])
            #expect(
                conflicts.contains("_type") && conflicts.contains("chore") && conflicts.contains("errand"),
                "\(conflicts)"
            )
        }
        try await cli.ok(["resolve", "--dir", a, "r", "_type", "errand"])
        try await cli.ok(sync)
        for dir in [a, b] {
            #expect(
                try await cli.ok(["conflicts", "--dir", dir, "--json"]).trimmingCharacters(in: .whitespacesAndNewlines)
                    == "[]"
            )
            #expect(
                try JSON(parsing: try await cli.ok(["get", "--dir", dir, "r", "--json"]))["type"] == .string("errand")
            )
        }
    }

    /// `unset` removes fields (gone from get, list, export; kept in history, brought back by
    /// revert); removing a field the item does not show is refused with one line and changes
    /// nothing; a set on one machine and an unset on another, concurrent, are a conflict both
    /// show, settled by resolve or by another unset.
    @Test func unsetRemovesFieldsAndConflictsWithAConcurrentSet() async throws {
        let cli = CLI("unset")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        try await cli.ok(["add", "--dir", a, "--id", "u", "title=Climb", "due=2026-12-01", "note=null"])
        let after = try JSON(parsing: try await cli.ok(["unset", "--dir", a, "u", "due", "note", "--json"]))
        #expect(after["fields"] == .object([("title", .string("Climb"))]), "\(after)")
        #expect(!(try await cli.ok(["export", "--dir", a])).contains("due"))
        #expect(try await cli.ok(["history", "--dir", a, "u", "due"]).contains("(removed)"))
        let before = try await cli.ok(["export", "--dir", a])
        let refused = try await cli.run(["unset", "--dir", a, "u", "due"])
        #expect(refused.status == 1 && refused.stderr.contains("has no field 'due'"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(try await cli.ok(["export", "--dir", a]) == before, "a refused unset changes nothing")
        try await cli.ok(["revert", "--dir", a, "u", "due", "--to", "2"])
        #expect(
            try JSON(parsing: try await cli.ok(["get", "--dir", a, "u", "--json"]))["fields"]?["due"]
                == .string("2026-12-01")
        )

        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: b, port: port)
        defer { node.stop() }
        let sync = ["sync", "--dir", a, "--peer", "127.0.0.1:\(port)"]
        try await cli.ok(sync)
        for settleByUnset in [false, true] {
            try await cli.ok(["unset", "--dir", a, "u", "title"])
            try await cli.ok(["set", "--dir", b, "u", "title=Climb again"])
            try await cli.ok(sync)
            for dir in [a, b] {
                let conflicts = try JSON(parsing: try await cli.ok(["conflicts", "--dir", dir, "--json"]))
                guard case .array(let list) = conflicts, let conflict = list.first else {
                    Issue.record("no conflict on \(dir): \(conflicts)")
                    continue
                }
                #expect(conflict["field"] == .string("title") && conflict["removed"] == .bool(true), "\(conflict)")
                #expect(conflict["values"] == .array([.string("Climb again")]), "\(conflict)")
                #expect(try await cli.ok(["conflicts", "--dir", dir]).contains("(removed)"))
            }
            if settleByUnset {
                try await cli.ok(["unset", "--dir", b, "u", "title"])
            } else {
                try await cli.ok(["resolve", "--dir", b, "u", "title", "Climb again"])
            }
            try await cli.ok(sync)
            for dir in [a, b] {
                #expect(
                    try await cli.ok(["conflicts", "--dir", dir, "--json"]).trimmingCharacters(
                        in: .whitespacesAndNewlines
                    ) == "[]"
                )
                let title = try JSON(parsing: try await cli.ok(["get", "--dir", dir, "u", "--json"]))["fields"]?[
                    "title"
                ]
                #expect(title == (settleByUnset ? nil : .string("Climb again")), "\(dir): \(String(describing: title))")
            }
            if settleByUnset { break }
        }
    }

    /// `set`, `rm` and `restore` with `--where` act on every item the query selects, in one
    /// transaction (all or none) with one feed entry per field; more than one item needs `--yes`
    /// when no one is at a terminal to answer, and a refusal changes nothing.
    @Test func setRmAndRestoreActOnWhatAQuerySelects() async throws {
        let cli = CLI("bulk")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let a = cli.path("a")
        let d = ["--dir", a]
        for (id, type, status) in [
            ("t1", "task", "done"), ("t2", "task", "done"), ("t3", "task", "open"), ("n1", "note", "done"),
        ] {
            try await cli.ok(["add"] + d + ["--id", id, "--type", type, "status=\(status)", "tags=[]"])
        }
        try await cli.ok(["set"] + d + ["n1", "tags=scalar"])
        let before = try await cli.ok(["export"] + d)
        let unconfirmed = try await cli.run(["set"] + d + ["--where", "status = done", "archived=true"])
        #expect(
            unconfirmed.status == 1 && unconfirmed.stderr.contains("3 items match")
                && unconfirmed.stderr.contains("pass --yes to change them all")
        )
        // Each bulk command names what it would do.
        let unconfirmedRm = try await cli.run(["rm"] + d + ["--where", "status = done"])
        #expect(
            unconfirmedRm.status == 1 && unconfirmedRm.stderr.contains("pass --yes to delete them all"),
            "\(unconfirmedRm.stderr)"
        )
        #expect(unconfirmed.stderr.split(separator: "\n").count == 1, "\(unconfirmed.stderr)")
        // All or none: n1's tags is no list, so the whole edit is refused.
        let partial = try await cli.run(["set"] + d + ["--where", "status = done", "tags+=x", "--yes"])
        #expect(partial.status == 1 && partial.stderr.contains("not a list"), "\(partial.stderr)")
        #expect(try await cli.ok(["export"] + d) == before, "refusals change nothing")

        let replay = try await cli.ok(["watch"] + d + ["--since", "0", "--once", "--json"])
        let seq = try replay.split(separator: "\n").last.map { try JSON(parsing: String($0))["seq"] } ?? nil
        let changed = try JSON(
            parsing: try await cli.ok(
                ["set"] + d + [
                    "--where", "status = done", "--of-type", "task", "archived=true", "n=1", "--yes", "--json",
                ]
            )
        )
        #expect(
            changed == .object([("changed", .integer(2)), ("ids", .array([.string("t1"), .string("t2")]))]),
            "\(changed)"
        )
        guard case .integer(let since)? = seq else {
            Issue.record("no feed position: \(replay)")
            return
        }
        let feed = try await cli.ok(["watch"] + d + ["--since", String(since), "--once", "--json"])
        #expect(feed.split(separator: "\n").count == 4, "one entry per field of each item: \(feed)")
        #expect(try await cli.ok(["rm"] + d + ["--where", "archived = true", "--yes"]).contains("deleted 2 items"))
        let listed = try await cli.ok(["list"] + d + ["--json"])
        #expect(listed.contains("t3") && !listed.contains("\"t1\""), "\(listed)")
        let unconfirmedRestore = try await cli.run(["restore"] + d + ["--where", "n = 1"])
        #expect(
            unconfirmedRestore.status == 1 && unconfirmedRestore.stderr.contains("pass --yes to restore them all"),
            "\(unconfirmedRestore.stderr)"
        )
        #expect(try await cli.ok(["restore"] + d + ["--where", "n = 1", "--yes"]).contains("restored 2 items"))
        #expect(
            try await cli.ok(["rm"] + d + ["--where", "status = open"]).contains("deleted 1 item"),
            "one needs no --yes"
        )
        let none = try await cli.ok(["rm"] + d + ["--where", "status = nothing"])
        #expect(none.contains("deleted 0 items"))
        let neither = try await cli.run(["rm"] + d)
        #expect(neither.status == 64, "\(neither.stderr)")
    }

    /// Links between items: `@ID` (a unique start) is resolved when written, `{"ref": ID}` in
    /// JSON; `get` shows the target's title, `list --links-to` and `--where FIELD = @ID` find
    /// what points at an item; `rm` says how many do; `check --links` lists links whose target
    /// is deleted; a link syncs to another machine, which shows the same.
    @Test func linksPointAtItemsAndAreCheckedWhenTheirTargetGoes() async throws {
        let cli = CLI("links")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        let d = ["--dir", a]
        try await cli.ok(["add"] + d + ["--id", "proj-garden-2026", "--type", "project", "title=Garden"])
        try await cli.ok(["add"] + d + ["--id", "task-dig", "title=Dig", "project=@proj-gar"])
        try await cli.ok(
            ["add"] + d + [
                "--id", "task-plant", "title=Plant", #"see=[{"ref":"proj-garden-2026"}]"#, "handle=\"@ana\"",
            ]
        )
        let dig = try JSON(parsing: try await cli.ok(["get"] + d + ["task-dig", "--json"]))
        #expect(dig["fields"]?["project"] == .object([("ref", .string("proj-garden-2026"))]), "resolved whole: \(dig)")
        let plant = try JSON(parsing: try await cli.ok(["get"] + d + ["task-plant", "--json"]))
        #expect(plant["fields"]?["handle"] == .string("@ana"), "quoted, it stays text")
        #expect(try await cli.ok(["get"] + d + ["task-dig"]).contains("@proj-garden-2026  → Garden"))
        #expect(try await cli.ok(["get"] + d + ["proj-garden-2026"]).contains("2 item(s) link here"))
        let linking = try await cli.ok(["list"] + d + ["--links-to", "proj-g", "--json"])
        #expect(linking.contains("task-dig") && linking.contains("task-plant"), "a list holds a link too: \(linking)")
        let byField = try await cli.ok(["list"] + d + ["--where", "project = @proj-g", "--json"])
        #expect(byField.contains("task-dig") && !byField.contains("task-plant"), "\(byField)")
        let unknown = try await cli.run(["set"] + d + ["task-dig", "project=@nothing"])
        #expect(
            unknown.status == 1 && unknown.stderr.contains("no item's id starts with 'nothing'"),
            "\(unknown.stderr)"
        )
        #expect(try await cli.ok(["check"] + d + ["--links"]).contains("every link points at a live item"))

        // The link syncs; the other machine shows where it points.
        let port = freePorts(1)[0]
        let node = try await NodeProcess(dir: b, port: port)
        defer { node.stop() }
        try await cli.ok(["sync"] + d + ["--peer", "127.0.0.1:\(port)"])
        #expect(try await cli.ok(["get", "--dir", b, "task-dig"]).contains("→ Garden"))

        let removed = try await cli.run(["rm"] + d + ["proj-garden-2026"])
        #expect(
            removed.status == 0 && removed.stderr.contains("2 item(s) link to proj-garden-2026"),
            "\(removed.stderr)"
        )
        #expect(try await cli.ok(["get"] + d + ["task-dig"]).contains("→ (deleted) Garden"))
        let check = try await cli.run(["check"] + d + ["--links", "--json"])
        #expect(check.status == 1, "broken links make check fail: \(check.stderr)")
        guard case .array(let broken) = try JSON(parsing: check.stdout) else {
            Issue.record("check --links --json: \(check.stdout)")
            return
        }
        #expect(broken.count == 2 && broken.allSatisfy { $0["state"] == .string("deleted") }, "\(broken)")
        try await cli.ok(["restore"] + d + ["proj-garden-2026"])
        #expect(try await cli.run(["check"] + d + ["--links"]).status == 0)
    }

    /// Every command, found by walking `--help` from the top, prints its defaults as a user types
    /// them: never a type's description (`Lifetime(seconds: 900)` once leaked into `invite --help`).
    @Test func everyHelpDefaultIsInUserWords() async throws {
        let cli = CLI("help-defaults")
        defer { cli.cleanUp() }
        var queue: [[String]] = [[]]
        var seen = 0
        while let command = queue.popLast() {
            let help = try await cli.run(command + ["--help"])
            #expect(help.succeeded, "\(command): \(help.stderr)")
            seen += 1
            var inSubcommands = false
            for line in help.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("SUBCOMMANDS:") {
                    inSubcommands = true
                } else if inSubcommands, line.hasPrefix("  "), !line.hasPrefix("   "),
                    let name = line.split(separator: " ").first, name != "help"
                {
                    queue.append(command + [String(name)])
                } else if !line.hasPrefix(" ") {
                    inSubcommands = false
                }
            }
            var rest = Substring(help.stdout.replacingOccurrences(of: "\n", with: " "))
            while let start = rest.range(of: "(default: ") {
                let value = rest[start.upperBound...].prefix { $0 != ")" }
                let typeLike = value.contains("(") || value.contains("Optional") || value == "nil"
                #expect(!typeLike, "lansync \(command.joined(separator: " ")) --help: default '\(value)'")
                rest = rest[start.upperBound...]
            }
        }
        #expect(seen > 30, "walked \(seen) commands")
    }

    /// Every command explains itself, and its prose reads as prose: no runs of spaces mid-sentence
    /// (a multi-line string literal's indentation once leaked into `relay --help`).
    @Test func everyHelpReadsAsProse() async throws {
        let cli = CLI("help")
        defer { cli.cleanUp() }
        let commands = [
            [], ["cluster", "create"], ["init"], ["add"], ["set"], ["rm"], ["restore"], ["resolve"], ["revert"],
            ["get"], ["list"], ["history"], ["conflicts"], ["export"], ["import"], ["node"], ["relay"], ["sync"],
            ["status"], ["check"], ["repair"], ["backup"], ["backup", "restore"], ["unset"], ["doctor"],
        ]
        for command in commands {
            let help = try await cli.run(command + ["--help"])
            #expect(help.succeeded && help.stdout.contains("USAGE: lansync"), "\(command): \(help.stderr)")
            // Prose lines start at the margin; option rows are indented and aligned on purpose.
            for line in help.stdout.split(separator: "\n") where !line.hasPrefix(" ") && !line.hasPrefix("USAGE") {
                #expect(!line.contains("  "), "\(command) --help: '\(line)'")
            }
        }
    }

    /// Each item says whether its latest edit made here has left this machine: DIRTY until a peer
    /// is known to hold it, then SYNCED (every known peer has it); `list --dirty` shows what has
    /// not left; `status` counts this node's changes against its peers when there is no relay.
    @Test func itemsSayWhetherTheirEditsLeftThisMachine() async throws {
        let cli = CLI("sync-state")
        defer { cli.cleanUp() }
        try await cli.cluster(["a", "b"])
        let (a, b) = (cli.path("a"), cli.path("b"))
        try await cli.ok(["add", "--dir", a, "--id", "here", "title=made here"])
        func sync(_ id: String) async throws -> JSON? {
            try JSON(parsing: try await cli.ok(["get", "--dir", a, id, "--json"]))["sync"]
        }
        #expect(try await sync("here")?["state"] == .string("DIRTY"))
        #expect(try await cli.ok(["list", "--dir", a, "--dirty"]).contains("here"))
        let ports = freePorts(1)
        do {
            let nodeB = try await NodeProcess(dir: b, port: ports[0])
            try await cli.ok(["sync", "--dir", a, "--peer", "127.0.0.1:\(ports[0])"])
            nodeB.stop()
        }
        let synced = try await sync("here")
        #expect(synced?["state"] == .string("SYNCED"), "\(String(describing: synced))")
        guard case .array(let holders)? = synced?["peers"] else {
            Issue.record("no peers: \(String(describing: synced))")
            return
        }
        #expect(holders.map { $0["name"] } == [.string("b")], "\(holders)")
        #expect(!(try await cli.ok(["list", "--dir", a, "--dirty"]).contains("here")))
        // A later edit here is DIRTY again until it leaves; an item b made has no state on b's side
        // of a's replica (nothing of a's is on its way).
        try await cli.ok(["set", "--dir", a, "here", "title=edited again"])
        #expect(try await sync("here")?["state"] == .string("DIRTY"))
        try await cli.ok(["add", "--dir", b, "--id", "there", "title=made there"])
        let status = try JSON(parsing: try await cli.ok(["status", "--dir", a, "--json"]))
        #expect(status["changes"]?["relay"] == .null, "\(status)")
        #expect(status["changes"]?["dirty"] == .integer(1), "\(status)")
        guard case .array(let listed) = try JSON(parsing: try await cli.ok(["list", "--dir", b, "--json"])) else {
            Issue.record("list --json is no array")
            return
        }
        #expect(listed.map { $0["sync"]?["state"] ?? .null } == [.null, .string("DIRTY")], "\(listed)")
    }

    @Test func historyListsEveryVersionNewestFirst() async throws {
        let cli = CLI("history")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        try await cli.ok(["add"] + d + ["--id", "h", "title=one"])
        try await cli.ok(["set"] + d + ["h", "title=two"])
        try await cli.ok(["set"] + d + ["h", "title=three"])
        let json = try JSON(parsing: try await cli.ok(["history"] + d + ["h", "title", "--json"]))
        guard case .array(let entries) = json else {
            Issue.record("not an array")
            return
        }
        #expect(entries.compactMap { $0["write"]?["set"] } == [.string("three"), .string("two"), .string("one")])
        #expect(entries.compactMap { $0["live"] } == [.bool(true), .bool(false), .bool(false)])
        #expect(entries.allSatisfy { $0["writer"] == .string("a") })
        let unknownField = try await cli.run(["history"] + d + ["h", "nope"])
        #expect(unknownField.status != 0)
        // The type is shown (users change it with 'set --type'); the tombstone stays out unless
        // --all (or named).
        func fields(_ args: [String]) async throws -> Set<String> {
            guard case .array(let all) = try JSON(parsing: try await cli.ok(["history"] + d + args + ["--json"])) else {
                return []
            }
            return Set(all.compactMap { if case .string(let f)? = $0["field"] { f } else { nil } })
        }
        #expect(try await fields(["h"]) == ["title", "_type"])
        #expect(try await fields(["h", "--all"]) == ["title", "_type"])
        #expect(try await fields(["h", "_type"]) == ["_type"])
        // A list write a later one superseded is "in list" while its element is still there.
        try await cli.ok(["set"] + d + ["h", "tags+=first"])
        try await cli.ok(["set"] + d + ["h", "tags+=second"])
        let human = try await cli.ok(["history"] + d + ["h", "tags"])
        let rows = human.split(separator: "\n").dropFirst()
        #expect(rows.count == 2 && rows.first?.contains("live") == true, "\(human)")
        // An element added shows as `set` takes it; a whole list written, as its value.
        #expect(rows.first?.hasSuffix("+= second") == true, "\(human)")
        #expect(rows.last?.contains("in list") == true, "\(human)")
        try await cli.ok(["set"] + d + ["h", "tags-=first"])
        // Newest first: the removal (live), "second" (still in the list), "first" (gone: old).
        let after = try await cli.ok(["history"] + d + ["h", "tags"]).split(separator: "\n").dropFirst()
        #expect(after.map { $0.contains("live") } == [true, false, false], "\(after)")
        #expect(after.dropFirst().first?.contains("in list") == true && after.last?.contains("old") == true, "\(after)")
        #expect(after.first?.hasSuffix("-= first") == true, "\(after)")
        try await cli.ok(["set"] + d + ["h", #"tags=["a","b"]"#])
        let whole = try await cli.ok(["history"] + d + ["h", "tags"]).split(separator: "\n").dropFirst().first
        #expect(whole?.hasSuffix(#"= ["a","b"]"#) == true, "\(whole ?? "")")
    }

    /// Commands that only read leave the replica file as it was (with no node running): each
    /// opens one connection, which writes nothing. A connection pool commits as it opens, and
    /// every `get` used to commit, sync and checkpoint: the file's header changed at each.
    @Test func readingCommandsLeaveTheReplicaAsItWas() async throws {
        let cli = CLI("reads")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let d = ["--dir", cli.path("a")]
        let id = try await cli.ok(["add"] + d + ["title=kept", "tags+=x"]).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        try await cli.ok(["set"] + d + [id, "title=kept again"])
        let file = cli.path("a/replica.sqlite")
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        for command in [
            ["get", id], ["list"], ["history", id, "title"], ["conflicts"], ["status"], ["get", id, "--json"],
        ] {
            try await cli.ok([command[0]] + d + command.dropFirst())
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "a reading command wrote to the replica")
        #expect(!FileManager.default.fileExists(atPath: file + "-wal"))
    }

    /// A command loads libavahi-client (and the twelve libraries it brings) only when it
    /// discovers: the binary does not link it, and discovery loads it with dlopen. The dynamic
    /// loader's own log of the files it opens is the witness.
    @Test func commandsStartWithoutLoadingAvahi() async throws {
        let cli = CLI("avahi")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        for command in [["--version"], ["list", "--dir", cli.path("a")]] {
            let run = try await cli.run(command, environment: ["LD_DEBUG": "files"])
            #expect(run.succeeded, "\(run.stderr.suffix(500))")
            #expect(run.stderr.contains("libsqlite3.so"), "the loader's log shows what it loads")
            #expect(!run.stderr.contains("libavahi"), "lansync \(command.joined(separator: " ")) loaded libavahi")
        }
    }

    /// `status` tells a node that runs but does not answer (stopped with SIGSTOP here: busy or
    /// stuck) from no node at all: one line on stderr, the node shown running and not answering,
    /// and the replica as the file says. It used to wait five seconds and then show the replica
    /// as if no node ran: CI saw a `status` take 7.6 s beside a busy debug node.
    @Test func statusTellsANodeThatDoesNotAnswerFromNoNode() async throws {
        let cli = CLI("status-wait")
        defer { cli.cleanUp() }
        try await cli.cluster(["a"])
        let a = cli.path("a")
        try await cli.ok(["add", "--dir", a, "--id", "one", "title=one"])
        let none = try await cli.status(a)
        #expect(none["running"] == .bool(false) && none["answering"] == .bool(true), "\(none)")

        let node = try await NodeProcess(dir: a, port: freePorts(1)[0])
        defer { node.stop() }
        var live: JSON = .null
        _ = try await eventually(within: .seconds(30)) {
            live = try await cli.status(a)
            return live["running"] == .bool(true)
        }
        #expect(live["running"] == .bool(true) && live["answering"] == .bool(true), "\(live)")
        #expect(live["listen"] != .null, "\(live)")

        kill(node.pid, SIGSTOP)
        var frozen = true
        // Before `node.stop()`'s defer: SIGTERM waits on a stopped process, and so would the test.
        defer { if frozen { kill(node.pid, SIGCONT) } }
        let stuck = try await cli.run(["status", "--dir", a, "--json", "--wait", "1"])
        let shown = try await cli.run(["status", "--dir", a, "--wait", "1"])
        kill(node.pid, SIGCONT)
        frozen = false
        #expect(stuck.status == 0, "\(stuck.stderr)")
        let json = try JSON(parsing: stuck.stdout)
        #expect(json["running"] == .bool(true) && json["answering"] == .bool(false), "\(json)")
        #expect(json["items"] == .integer(1) && json["listen"] == .null, "\(json)")
        let note = stuck.stderr.split(separator: "\n")
        #expect(note.count == 1 && note.first?.contains("did not answer within 1 s") == true, "\(stuck.stderr)")
        #expect(shown.status == 0 && shown.stdout.contains("running, not answering"), "\(shown.stdout)")

        let back = try await cli.status(a)
        #expect(back["running"] == .bool(true) && back["answering"] == .bool(true), "\(back)")
        let refused = try await cli.run(["status", "--dir", a, "--wait", "0"])
        #expect(refused.status != 0 && refused.stderr.contains("--wait takes 1 to 3600 seconds"), "\(refused.stderr)")
    }
}
