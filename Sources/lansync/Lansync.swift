import ArgumentParser
import Foundation
import LansyncHost

/// The `lansync` command: the one binary for the CLI, the node daemon and the relay.
@main
struct Lansync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lansync",
        abstract: "Keep a small database of items in sync across the machines of a LAN.",
        discussion: """
            Each machine keeps a full replica in a data directory: --dir DIR, else $LANSYNC_DIR, \
            else ~/.lansync. Edits work offline; read commands accept --json. \
            Exit status: 0 on success, 1 when the command failed (the replica is unchanged), \
            64 for a usage error.
            """,
        version: "0.1.0",
        subcommands: [
            ClusterCommand.self, InitCommand.self, InviteCommand.self, JoinCommand.self, RevokeCommand.self,
            MembersCommand.self,
            AddCommand.self, SetCommand.self, UnsetCommand.self, RemoveCommand.self, RestoreCommand.self,
            ResolveCommand.self,
            RevertCommand.self,
            GetCommand.self, ListCommand.self, HistoryCommand.self, ConflictsCommand.self, WatchCommand.self,
            IndexCommand.self,
            ExportCommand.self, ImportCommand.self,
            NodeCommand.self, RelayCommand.self, SyncCommand.self, StatusCommand.self, APITokenCommand.self,
            UICommand.self,
            BackupCommand.self, CheckCommand.self, RepairCommand.self, DoctorCommand.self,
        ]
    )

    /// Refuses arguments that are not valid UTF-8 before anything parses them: Swift would turn
    /// the bad bytes into U+FFFD and store that, silently (import refuses such bytes too).
    static func main() async {
        // Everything lansync creates (the replica and its WAL, keys, the token, the control
        // socket) is its owner's alone: the data directory holds every record (Docs/SECURITY.md).
        umask(0o077)
        let argv = UnsafeBufferPointer(start: CommandLine.unsafeArgv, count: Int(CommandLine.argc))
        for (position, raw) in argv.enumerated().dropFirst() {
            guard let raw, String(validatingCString: raw) == nil else { continue }
            FileHandle.standardError.write(
                Data(
                    "Error: argument \(position) is not valid UTF-8 text: convert it first (for example with iconv -t UTF-8)\n"
                        .utf8
                )
            )
            Foundation.exit(1)
        }
        let arguments = Self.movingGlobalDirectory(Array(CommandLine.arguments.dropFirst()))
        var command: any ParsableCommand
        do { command = try parseAsRoot(arguments) } catch { exit(withError: error) }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: Self.printable(error))
        }
    }

    /// An error as it may reach the terminal, with the CLI's advice (``Remedy``): its text may
    /// carry what a peer said (a refusal's words, a name), so control characters are escaped
    /// (``TerminalText``). ArgumentParser's own
    /// errors (usage, help, exit codes) pass as they are.
    static func printable(_ error: any Error) -> any Error {
        switch error {
        case is ExitCode, is CleanExit, is ValidationError: return error
        default:
            // What was wrong (the layer that found it says), and what to do (the CLI says).
            let text = Remedy.line(for: error)
            if text == String(describing: error), TerminalText.isPlain(text) { return error }
            return CLIError(TerminalText.escaped(text))
        }
    }

    /// `lansync --dir X list` as users type it (`git -C`, `sqlite3 FILE`): a `--dir` given before
    /// the subcommand moves to the end of the arguments (before a `--`), where every command that
    /// reads a data directory takes it.
    static func movingGlobalDirectory(_ arguments: [String]) -> [String] {
        var rest = arguments[...]
        var moved: [String] = []
        while let first = rest.first {
            if first == "--dir", rest.count >= 2 {
                moved += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--dir=") {
                moved.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        guard !moved.isEmpty else { return arguments }
        var result = Array(rest)
        result.insert(contentsOf: moved, at: result.firstIndex(of: "--") ?? result.endIndex)
        return result
    }
}
