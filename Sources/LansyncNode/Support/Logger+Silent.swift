public import Logging

extension Logger {
    /// A logger that drops every line: for the parts of a node that tests run alone.
    public static var silent: Logger { Logger(label: "lansync", factory: { _ in SwiftLogNoOpLogHandler() }) }
}
