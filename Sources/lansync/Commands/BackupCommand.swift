import ArgumentParser
import LansyncHost

/// `lansync backup FILE` and `lansync backup restore FILE`: a consistent copy of the replica,
/// taken while the node runs, and putting one back.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of the replica to FILE, or put one back.",
        discussion: """
            'lansync backup FILE' copies the replica while the node and other commands go on (SQLite's \
            online backup: the copy is the replica as one moment saw it). Keep node.pem and cluster.pem \
            of the data directory with it. 'lansync backup restore FILE' puts a backup back, with the \
            node stopped: its next edit writes as a new writer, and peers send back what the backup \
            lacks (Docs/OPERATIONS.md, "Backups").
            """,
        subcommands: [Create.self, Restore.self, Accept.self],
        defaultSubcommand: Create.self
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Write a consistent copy of the replica to FILE (the default).",
            discussion: """
                Runs beside the node without stopping it. The copy is written next to FILE and renamed \
                into place, so FILE is either the whole backup or untouched. Refuses an existing FILE \
                unless --force.
                """
        )

        @OptionGroup var data: DataDirectoryOptions
        @Argument(help: "Where to write the backup.") var file: String
        @Flag(help: "Replace FILE if it exists.") var force = false
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let summary = try data.directory.backup(to: file, replacing: force)
            if json { return print(summary.jsonText) }
            print(
                "wrote \(file) (\(Render.megabytes(summary.bytes))): \(summary.items) items, \(summary.deleted) deleted, as of \(WallClock.iso8601(milliseconds: summary.takenAt)); keep node.pem and cluster.pem with it, and put it back with 'lansync backup restore \(file)'"
            )
        }
    }

    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Put the replica back to a backup of this node (stop the node first).",
            discussion: """
                FILE must be a backup of this directory's node. It is copied into place (never \
                changed); the replica it replaces is kept beside it as replica.sqlite.before-restore-TIME. \
                When the node starts, peers send back every edit the backup lacks that any of them has, \
                and the first edit here writes as a new writer. Edits that were only in the replaced \
                replica and never reached a peer are only in the kept file. A backup older than the \
                cluster's away window first takes a snapshot from a current peer, keeping its own \
                edits that no one else has.
                """
        )

        @OptionGroup var data: DataDirectoryOptions
        @Argument(help: "The backup to put back.") var file: String
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let directory = data.directory
            let report = try directory.restoreBackup(from: file)
            let now = WallClock.milliseconds
            if json { return print(report.jsonText(now: now)) }
            let taken =
                report.backup.takenAt == 0 ? "" : ", as of \(WallClock.iso8601(milliseconds: report.backup.takenAt))"
            var line =
                "restored \(directory.replicaPath) from \(file) (\(report.backup.items) items\(taken))"
            if let kept = report.replacedCopy { line += "; the replaced replica is kept as \(kept)" }
            line += ". Start the node: peers send back what the backup lacks"
            if report.isStale(now: now) {
                line +=
                    ". The backup is older than the cluster's away window (\(SettingDuration.text(report.awayAfter))): the node first takes a snapshot from a current peer, keeping its own edits that no one else has"
            }
            print(line)
        }
    }

    struct Accept: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "accept",
            abstract: "Say this replica, put back from an old copy, is current (when no member is).",
            discussion: """
                A replica put back from a copy older than the cluster's away window waits to rejoin \
                from a current member, and merges with no one meanwhile; the relay waits the same way \
                for a member that is current: neither such a copy nor away itself. When every machine \
                was put back from such a copy, they wait for each other for good ('status' shows \
                'stale since' on each). Run this on one of them, the relay if it is one: it counts as \
                current from now, and the others rejoin from it. What only the other copies held that \
                this one lacks comes back as their own edits; deletes that only a lost replica held may \
                come back. When the members that are no copy have stopped hearing of the waiting relay \
                (away itself), name the one that heard of it last with --from NAME on the relay: it \
                rejoins from that member at their next session (Docs/MERGE.md, "Stale or away").
                """
        )

        static let notStale = HostError(
            "this replica is not a copy put back that waits to rejoin, so there is nothing to accept (nothing changed); 'lansync status' shows 'stale since' on one that is"
        )

        @OptionGroup var data: DataDirectoryOptions
        @Option(
            help: ArgumentHelp(
                "Rejoin from this member at the next session, though it is away itself.",
                valueName: "NAME"
            )
        )
        var from: String?

        func run() throws {
            if let from {
                guard let (member, stale) = try data.directory.acceptRejoin(from: from) else {
                    throw Self.notStale
                }
                return print(
                    "this replica (stale since \(WallClock.iso8601(milliseconds: stale))) rejoins from \(member.name ?? member.nodeID.short) (\(member.nodeID.short)) at their next session, unless that member is a copy put back too"
                )
            }
            guard let stale = try data.directory.acceptCopy() else {
                throw Self.notStale
            }
            print(
                "this replica (stale since \(WallClock.iso8601(milliseconds: stale))) now counts as current: the other members rejoin from it when they meet it"
            )
        }
    }
}
