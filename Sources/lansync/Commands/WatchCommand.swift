import ArgumentParser
import Foundation
import LansyncHost

/// `lansync watch [--since SEQ] [--type T] [--item ID] [--field F] [--json] [--once]`
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow the change feed: every change this replica commits, local or merged, in order.",
        discussion: """
            Each change has a sequence number that only grows and is never given twice, also \
            across restarts: to resume, pass the last one seen with --since. Works with or without \
            a running node (it reads the replica). Without --since, starts with the next change; \
            --since 0 lists every field once, at its latest change. A field changed several times \
            since the last look shows once, at its latest (Docs/API.md, "The change feed").
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: ArgumentHelp("Start after this sequence number (0: every field's latest change).", valueName: "SEQ"))
    var since: UInt64?
    @Option(help: "Only changes of items of this type.") var type: String?
    @Option(help: "Only changes of this item (its id, or a unique start of it).") var item: String?
    @Option(help: "Only changes of this field.") var field: String?
    @Flag(help: "Print each change as one JSON object per line (JSON Lines).") var json = false
    @Flag(help: "Print the changes there are now, then exit, instead of following.") var once = false

    func run() async throws {
        let replica = try LocalReplica(data.directory)
        let itemID = try item.map { try replica.resolve($0) }
        let fieldName = field.map { FieldName(unchecked: $0) }
        var last = try since ?? replica.latestChange()
        var out = Output()
        while true {
            let page = try replica.changes(since: last, limit: 1000, type: type, item: itemID, field: fieldName)
            for entry in page.entries { out.line(json ? entry.jsonText : Self.line(entry)) }
            // Past changes the filters left out too, so they are not read again.
            last = page.last
            out.flush()
            if page.entries.count == 1000 { continue }
            if once { return }
            // Polls: a read of a feed with nothing new is one indexed lookup.
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func line(_ entry: ChangeEntry) -> String {
        let value = entry.removed ? "(removed)" : entry.value.map { Render.human($0, width: 120) } ?? "-"
        return
            "\(entry.seq)  \(WallClock.iso8601(milliseconds: entry.at))  \(entry.kind.name)  \(entry.item.rawValue).\(entry.field.rawValue) = \(value)"
    }
}
