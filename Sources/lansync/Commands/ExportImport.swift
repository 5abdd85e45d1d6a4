import ArgumentParser
import Foundation
import LansyncHost

/// `lansync export [FILE]`
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every item (deleted ones too) as JSON Lines, sorted by id.",
        discussion: "Each line is what 'lansync get --json' prints. Without FILE, writes to standard output."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The file to write (replaced if it exists).") var file: String?

    func run() throws {
        let replica = try LocalReplica(data.directory)
        var lines: [UInt8] = []
        var out = Output()
        try replica.export { line in
            if file == nil {
                out.line(line)
            } else {
                lines.append(contentsOf: line.utf8)
                lines.append(0x0a)
            }
        }
        out.flush()
        if let file {
            guard FileManager.default.createFile(atPath: file, contents: Data(lines)) else {
                throw CLIError("cannot write \(file): check the path and its permissions")
            }
        }
    }
}

/// `lansync import [FILE]`
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Read items from JSON Lines (as 'export' writes them) as local edits.",
        discussion: """
            Each line is an object with "fields" and, optionally, "id", "type" and "deleted". A new id \
            creates the item; a known id gets the fields that differ (fields not named are left as \
            they are). All lines are one transaction: a malformed line stops the import with its line \
            number, and nothing from the input is imported. Without FILE, reads standard input.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The file to read.") var file: String?
    @Flag(help: "Print the summary as one JSON object on stdout: lines, edits, seconds.") var json = false

    func run() throws {
        let started = Date()
        let input: FileHandle
        var total: Int?
        if let file {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                throw CLIError("cannot read \(file): check the path")
            }
            input = handle
            total = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? nil
        } else {
            input = FileHandle.standardInput
        }
        let replica = try LocalReplica(data.directory)
        let showProgress = Terminal.stderrIsTerminal
        var shown = Date.distantPast
        let result: ItemImport.Progress
        do {
            result = try replica.importItems(from: input) { progress in
                guard showProgress, Date().timeIntervalSince(shown) >= 0.1 else { return }
                shown = Date()
                Self.show(progress, total: total)
            }
        } catch {
            if showProgress { Terminal.stderr("\n") }
            throw error
        }
        if showProgress {
            Self.show(result, total: total)
            Terminal.stderr("\n")
        }
        let seconds = Date().timeIntervalSince(started)
        if json {
            print(result.jsonText(seconds: seconds))
            return
        }
        Terminal.stderr(
            "imported \(result.lines) line(s) as \(result.edits) edit(s) in \(String(format: "%.1f", seconds)) s\n"
        )
    }

    /// One progress line, redrawn in place: lines and edits so far, and how much of a file is read.
    static func show(_ progress: ItemImport.Progress, total: Int?) {
        var text = "\rimporting: \(progress.lines) line(s), \(progress.edits) edit(s)"
        if let total, total > 0 { text += ", \(min(100, progress.bytes * 100 / total))% of the file" }
        Terminal.stderr(text)
    }
}
