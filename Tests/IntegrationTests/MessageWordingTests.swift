import Foundation
import Testing

/// The words of every error a command can print, read from the source of every module: one line
/// (a line break would print as a row of its own), starting in lower case after the
/// argument parser's "Error: ", with no closing full stop, and none of a library's own forms
/// ("Optional(", "Error Domain"). What each says is checked where it is raised (BadInputTests,
/// ErrorMessageTests, CLIContractTests); this keeps the form of all of them at once, those no test
/// reaches included.
@Suite struct MessageWordingTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Each `CLIError("...")` and `HostError("...")`: its file, line and literal text (as written,
    /// interpolations included).
    static func messages() throws -> [(file: String, line: Int, text: String)] {
        let pattern = try NSRegularExpression(pattern: #"(CLIError|HostError)\(\s*"((?:[^"\\]|\\.)*)""#)
        var found: [(String, Int, String)] = []
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources.appendingPathComponent(file).path, encoding: .utf8)
            let whole = NSRange(text.startIndex..., in: text)
            for match in pattern.matches(in: text, range: whole) {
                guard let literal = Range(match.range(at: 2), in: text), let start = Range(match.range, in: text)
                else { continue }
                let line = text[..<start.lowerBound].filter { $0 == "\n" }.count + 1
                found.append((file, line, String(text[literal])))
            }
        }
        return found
    }

    @Test func everyErrorIsOneLineInTheCLIsForm() throws {
        let messages = try Self.messages()
        #expect(messages.count >= 80, "the scan found \(messages.count) messages: is the pattern still right?")
        for (file, line, text) in messages {
            let at = "\(file):\(line): \(text.prefix(70))"
            #expect(!text.contains(#"\n"#), "a line break: \(at)")
            #expect(!text.hasSuffix("."), "a closing full stop: \(at)")
            #expect(!text.contains("Optional(") && !text.contains("Error Domain"), "a library's form: \(at)")
            // Lower case after "Error: ", unless it starts with a name that is written so.
            if let first = text.first, first.isUppercase {
                let names = [
                    "PostgreSQL", "SQLite", "TLS", "HTTP", "API", "ID", "JSON", "UTF", "Avahi", "D-Bus", "IPv", "I ",
                ]
                #expect(names.contains { text.hasPrefix($0) }, "starts in upper case: \(at)")
            }
        }
    }
}
