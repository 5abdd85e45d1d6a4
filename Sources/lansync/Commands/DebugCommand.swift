import ArgumentParser
import Foundation
import LansyncCore
import LansyncStore

/// Hidden tools for tests: not part of the user contract.
struct DebugCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug",
        abstract: "Tools for lansync's own tests.",
        shouldDisplay: false,
        subcommands: [EditLoop.self, Integrity.self]
    )

    /// Makes COUNT edits to one field, one transaction each, printing `COUNTER VALUE` after each
    /// commit: exactly the edits the process acknowledged, for the crash test.
    struct EditLoop: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "edit-loop")
        @OptionGroup var data: DataDirectoryOptions
        @Argument var id: String
        @Argument var count: Int
        @Option var tag: String = "w"

        func run() throws {
            let store = try data.directory.open()
            let itemID = try AssignmentParser.parseItemID(id)
            for i in 0..<count {
                let value = "\(tag)-\(i)"
                let dot: Dot
                do { dot = try store.apply(.update([.set(FieldName(unchecked: "n"), .string(value))]), to: itemID, wallMilliseconds: WallClock.milliseconds) } catch { throw CLIError(error) }
                let line = "\(dot.counter) \(value)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        }
    }

    /// Prints `PRAGMA integrity_check`.
    struct Integrity: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "integrity")
        @OptionGroup var data: DataDirectoryOptions

        func run() throws {
            let store = try data.directory.open()
            do { print(try store.integrityCheck()) } catch { throw CLIError(error) }
        }
    }
}
