import ArgumentParser
import Foundation
import LansyncHost

/// `--where`, `--of-type` and `--yes`: what `set`, `rm` and `restore` take to act on every item a
/// query selects instead of one id (the same conditions as `list --where`).
struct BulkOptions: ParsableArguments {
    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "Act on every item whose field passes, instead of one ID (repeatable, all must; as 'list --where').",
            valueName: "condition"
        )
    )
    var conditions: [String] = []
    @Option(
        name: .customLong("of-type"),
        help: ArgumentHelp("With --where, only items of this type.", valueName: "type")
    )
    var ofType: String?
    @Flag(help: "With --where, change more than one item without asking.") var yes = false

    var isBulk: Bool { !conditions.isEmpty }

    func validate() throws {
        if !isBulk, ofType != nil { throw ValidationError("--of-type goes with --where") }
        if !isBulk, yes { throw ValidationError("--yes goes with --where") }
    }

    /// Selects the items, asks before changing more than one (unless `--yes`), changes them all
    /// in one transaction, and says what it did: `verb` as in "deleted 3 items".
    func run(_ action: LocalReplica.BulkAction, in replica: LocalReplica, verb: String, json: Bool) throws {
        let query = try replica.resolvingLinks(ItemQuery(filters: try conditions.map(QueryParser.filter)))
        let ids = try replica.select(query, type: ofType, for: action)
        if ids.count > 1, !yes { try Self.confirm(ids, verb: Self.infinitive(of: verb)) }
        try replica.perform(action, on: ids)
        if json { return print(LocalReplica.bulkJSONText(ids)) }
        print("\(verb) \(ids.count) item\(ids.count == 1 ? "" : "s")")
    }

    /// "deleted" → "delete", "changed" → "change", "restored" → "restore" (the three verbs a
    /// bulk edit has all end in "-ed" after an "e").
    static func infinitive(of pastTense: String) -> String {
        pastTense.hasSuffix("ed") ? String(pastTense.dropLast()) : pastTense
    }

    /// Asks on the terminal; refuses, changing nothing, when no one can answer (a script must say
    /// `--yes`).
    /// `verb` is what is done to them, as in "pass --yes to delete them all".
    static func confirm(_ ids: [ItemID], verb: String) throws {
        let sample = ids.prefix(3).map(\.rawValue).joined(separator: ", ") + (ids.count > 3 ? ", ..." : "")
        guard isatty(0) == 1, Terminal.stderrIsTerminal else {
            throw CLIError("\(ids.count) items match (\(sample)): pass --yes to \(verb) them all; nothing was changed")
        }
        Terminal.stderr(
            "\(ids.count) items match (\(sample)). \(verb.prefix(1).uppercased() + verb.dropFirst()) them all? [y/N] "
        )
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
        guard answer == "y" || answer == "yes" else { throw CLIError("nothing was changed") }
    }
}
