import ArgumentParser
import LansyncHost

/// `lansync cluster create FILE`: makes a new cluster secret.
struct ClusterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Manage the cluster secret and the cluster's settings.",
        subcommands: [Create.self, AdmittersCommand.self, ClusterSetCommand.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            // Named here, not derived from the type's name: deriving it (String(describing:))
            // made every lansync command scan the binary's protocol conformances at start
            // (about a seventh of `lansync --version`'s time).
            commandName: "create",
            abstract: "Write a new cluster secret to FILE (mode 0600).",
            discussion: """
                The secret is the cluster's certificate authority: a machine that holds it admits \
                others. Run 'lansync init --cluster FILE' on the machine (or the few) that should \
                admit; every other machine joins with a code from 'lansync invite' ('lansync join \
                CODE') and never holds the secret. Refuses to overwrite an existing file.
                """
        )

        @Argument(help: "Where to write the secret.") var file: String

        func run() throws {
            let cluster = try ClusterFile.create(at: file)
            print(
                "wrote cluster secret \(file) (cluster \(cluster.text)); run 'lansync init --cluster \(file)' on the machines that admit others, and 'lansync invite' there for the rest"
            )
        }
    }
}

/// A length of time for a setting: `0s`, `90s`, `15m`, `2h`, `30d` (a bare number is seconds).
struct SettingDuration: ExpressibleByArgument, Sendable {
    let milliseconds: UInt64

    init?(argument: String) {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var text = Substring(argument)
        var unit: UInt64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            text = text.dropLast()
        }
        guard let count = UInt64(text), count <= 36_500 * 86_400 / unit else { return nil }
        milliseconds = count * unit * 1000
    }

    static func text(_ milliseconds: UInt64) -> String {
        let seconds = milliseconds / 1000
        for (unit, size) in [("d", UInt64(86_400)), ("h", 3600), ("m", 60)] where seconds >= size && seconds % size == 0
        {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}

/// `lansync cluster set NAME DURATION`: the collection settings (Docs/MERGE.md, "Causal
/// stability and collection").
struct ClusterSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract:
            "Set how long deleted items stay restorable, how long a member may be silent, and whether writes must be signed.",
        discussion: """
            trash-window (default 30d): a deleted item can be restored ('lansync restore') for \
            this long; after it (and a day's margin for clocks), once every active member has \
            seen the delete, its fields and history are collected and only a minimal tombstone \
            (its delete and its type) stays. away-after (default 90d): a member not heard of for this long is marked away \
            and no longer holds collection back; when it comes back, it rejoins from a \
            snapshot. Durations: 0s, 90s, 15m, 2h, 30d. signed-writes (default off): 'on' \
            refuses, from now on, every write not signed by its writer's member (each member \
            signs its writes since protocol 1.14; what this machine holds now stays, shown as \
            unverified by 'lansync history'); turn it on once every member runs protocol 1.14 \
            or later: an older member is refused until it is upgraded. Without \
            arguments, prints the settings. Setting them needs the cluster's authority key (run \
            it on an admitting machine): they are signed, and travel to every member with the \
            next sessions, like a revocation.
            """
    )

    enum Name: String, ExpressibleByArgument, CaseIterable {
        case trashWindow = "trash-window"
        case awayAfter = "away-after"
        case signedWrites = "signed-writes"
    }

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "trash-window, away-after or signed-writes.") var name: Name?
    @Argument(
        help: ArgumentHelp(
            "The new value: a duration (0s, 90s, 15m, 2h, 30d), or on or off for signed-writes.",
            valueName: "VALUE"
        )
    )
    var value: String?

    /// The new duration, for trash-window and away-after.
    var duration: SettingDuration? { name == .signedWrites ? nil : value.flatMap(SettingDuration.init(argument:)) }

    func validate() throws {
        guard let name else { return }
        guard let value else {
            throw ValidationError(
                name == .signedWrites ? "give the new value too: on or off" : "give the new value too, e.g. 30d or 0s"
            )
        }
        if name == .signedWrites {
            guard value == "on" || value == "off" else {
                throw ValidationError("signed-writes is on or off, not '\(value)'")
            }
            return
        }
        guard duration != nil else {
            throw ValidationError("'\(value)' is not a duration: use a number and a unit, e.g. 0s, 90s, 15m, 2h or 30d")
        }
        if name == .awayAfter, let duration, duration.milliseconds < 60_000 {
            throw ValidationError(
                "away-after must be at least 1m: a member that is merely slow must not be marked away"
            )
        }
    }

    func run() throws {
        let replica = try LocalReplica(data.directory)
        var settings = try replica.collectionSettings()
        if name == .signedWrites {
            _ = try replica.setSignedWrites(value == "on")
        } else if let name, let duration {
            switch name {
            case .trashWindow: settings.trashWindow = duration.milliseconds
            case .awayAfter: settings.awayAfter = duration.milliseconds
            case .signedWrites: break
            }
            try replica.setCollectionSettings(settings)
        }
        print("trash-window \(SettingDuration.text(settings.trashWindow))")
        print("away-after \(SettingDuration.text(settings.awayAfter))")
        let rule = try replica.signedWritesStatement()
        if let rule, rule.required {
            print("signed-writes on (since \(WallClock.iso8601(milliseconds: rule.at)), set by \(rule.by.short))")
        } else {
            print("signed-writes off")
        }
    }
}
