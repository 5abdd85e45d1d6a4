/// A failure the CLI itself reports (errors from the layers below describe themselves): printed as
/// one line on stderr (`Error: ...`), exit status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String

    init(_ message: String) { description = message }
}
