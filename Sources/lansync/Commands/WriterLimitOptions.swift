import ArgumentParser
import LansyncHost

/// `--max-writers` and `--max-new-writers`, shared by `node` and `relay`: how many writers peers
/// may bring into this replica (Docs/SECURITY.md, "What a member can and cannot do").
struct WriterLimitOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The most writers this replica takes in from peers; a batch past it is refused (in status on both sides).",
            valueName: "count"
        )
    )
    var maxWriters = WriterBounds.standard.total
    @Option(
        help: ArgumentHelp(
            "The most writers new to this replica one session may bring; the next session carries on.",
            valueName: "count"
        )
    )
    var maxNewWriters = WriterBounds.standard.perSession

    func validate() throws {
        guard maxWriters >= 16 else { throw ValidationError("--max-writers must be at least 16") }
        guard maxNewWriters >= 1 else { throw ValidationError("--max-new-writers must be at least 1") }
    }

    var bounds: WriterBounds { WriterBounds(total: maxWriters, perSession: min(maxNewWriters, maxWriters)) }
}
