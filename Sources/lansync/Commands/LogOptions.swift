import ArgumentParser
import LansyncHost
import Logging

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
        guard Logger.Level(rawValue: logLevel) != nil else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--log-level \(logLevel) is not a level: give one of \(levels)")
        }
        guard LineLogHandler.Format(rawValue: logFormat) != nil else {
            throw ValidationError("--log-format \(logFormat) is not a format: give text or json")
        }
    }

    /// Makes every logger of this process write lines as chosen; returns the node's.
    func bootstrap() -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let format = LineLogHandler.Format(rawValue: logFormat) ?? .text
        LoggingSystem.bootstrap { _ in LineLogHandler(level: level, format: format) }
        return Logger(label: "lansync")
    }
}
