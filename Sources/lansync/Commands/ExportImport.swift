import ArgumentParser
import Foundation
import LansyncHost
import LansyncStore

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
        let store = try data.directory.open()
        var lines: [UInt8] = []
        var out = Output()
        try store.forEachItem(includeDeleted: true) { item in
            if file == nil {
                out.line(item.jsonText)
            } else {
                lines.append(contentsOf: item.jsonText.utf8)
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

    func run() throws {
        let input: Data
        if let file {
            guard let d = FileManager.default.contents(atPath: file) else {
                throw CLIError("cannot read \(file): check the path")
            }
            input = d
        } else {
            input = FileHandle.standardInput.readDataToEndOfFile()
        }
        let directory = data.directory
        let store = try directory.open()
        let plan = try ImportPlan(input: input, store: store, wallMilliseconds: WallClock.milliseconds)
        let total = plan.edits.count
        let showProgress = Terminal.stderrIsTerminal && total >= 1000
        let started = Date()
        do {
            try directory.importItems(plan, into: store) { done in
                if showProgress, done % 1000 == 0 || done == total { Self.progress(done, total) }
            }
        } catch {
            if showProgress { Terminal.stderr("\n") }
            throw error
        }
        if showProgress { Terminal.stderr("\n") }
        let seconds = Date().timeIntervalSince(started)
        Terminal.stderr(
            "imported \(plan.lineCount) line(s) as \(total) edit(s) in \(String(format: "%.1f", seconds)) s\n"
        )
    }

    static func progress(_ done: Int, _ total: Int) {
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        Terminal.stderr("\rimporting [\(bar)] \(done)/\(total)")
    }
}
