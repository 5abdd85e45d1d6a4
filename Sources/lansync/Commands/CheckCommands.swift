import ArgumentParser
import LansyncHost

/// `lansync check [--json]`: the full check of the replica file.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the replica file for damage.",
        discussion: """
            Runs SQLite's integrity check, decodes every field state and checks it against the version \
            index. Exit status 0 if the replica is sound, 1 if it is damaged. A damaged replica is \
            refused for writes and by the node until 'lansync repair' rebuilds it (or a backup is \
            restored); a sound result lifts that.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Print one JSON object.") var json = false
    @Flag(help: "Instead, list the links whose target is deleted or missing (exit status 1 if there are any).")
    var links = false

    func run() throws {
        let replica = try LocalReplica(data.directory)
        if links { return try checkLinks(replica) }
        let report = try replica.check()
        if json {
            print(report.jsonText)
        } else if report.isSound {
            print("\(replica.path): sound (\(report.fieldsChecked) field states checked)")
        } else {
            for problem in report.problems { print(problem) }
        }
        if !report.isSound {
            throw CLIError(
                "\(replica.path) is damaged (\(report.problems.count) problem(s)): run 'lansync repair' to rebuild it from what is sound and from peers, or restore a backup"
            )
        }
    }
}

extension CheckCommand {
    /// `check --links`: one line per link of a live item whose target is deleted or missing.
    func checkLinks(_ replica: LocalReplica) throws {
        let broken = try replica.brokenLinks()
        if json {
            print(LocalReplica.brokenLinksJSONText(broken))
        } else {
            for link in broken {
                let state: String
                switch link.state {
                case .deleted(let title): state = "deleted" + (title.map { " (\($0))" } ?? "")
                case .missing, .live: state = "missing (no such item here)"
                }
                print("\(link.item.rawValue).\(link.field.rawValue) -> \(link.target.rawValue): \(state)")
            }
            if broken.isEmpty { print("every link points at a live item") }
        }
        if !broken.isEmpty {
            throw CLIError(
                "\(broken.count) link(s) point at a deleted or missing item: restore the target ('lansync restore ID'), or set the field to another item"
            )
        }
    }
}

/// `lansync repair`: rebuilds a damaged replica from what is sound in it; peers resend the rest.
struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Rebuild a damaged replica from what is sound in it and from peers.",
        discussion: """
            Stop the node first. Every field state that still reads goes into a new file with the same \
            identity; the damaged file is kept beside it. The new replica claims none of the lost \
            rows' edits, so peers send them again at the next sync, and it sends them the edits of \
            its own that survived. Edits that existed only in the lost rows are gone: restore a \
            backup instead if you have a recent one.
            """
    )

    @OptionGroup var data: DataDirectoryOptions

    func run() throws {
        let directory = data.directory
        let report = try directory.repair()
        print(
            "rebuilt \(directory.replicaPath): \(report.salvaged) field state(s) kept, \(report.lost) lost (peers resend them at the next sync); the damaged file is \(report.damagedCopy)"
        )
    }
}
