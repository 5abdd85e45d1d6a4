import ArgumentParser
import LansyncHost

/// `--log-level` and `--log-format`, shared by `node` and `relay` (Docs/OPERATIONS.md, "Logs").
struct LogOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The least level logged: trace, debug, info, notice, warning, error or critical. info has a line per session start and end, refused connection and discovery change; notice only what an operator must know.",
            valueName: "LEVEL"
        )
    )
    var logLevel = "info"
    @Option(
        help: ArgumentHelp(
            "text (a sentence per line) or json (JSON Lines with each line's figures as keys, for journald shippers).",
            valueName: "FORMAT"
        )
    )
    var logFormat = "text"

    func validate() throws {
        if let problem = NodeLogging.problem(level: logLevel, format: logFormat) { throw ValidationError(problem) }
    }

    /// Sends every log line of this process to stderr as the options say; the node's logger.
    func bootstrap() -> Logger { NodeLogging.bootstrap(level: logLevel, format: logFormat) }
}
