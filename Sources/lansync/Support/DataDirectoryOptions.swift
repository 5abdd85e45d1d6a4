import ArgumentParser
import LansyncHost

/// The `--dir` option every replica command takes.
struct DataDirectoryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("The data directory (default: $LANSYNC_DIR, else ~/.lansync).", valueName: "DIR")
    )
    var dir: String?

    /// The directory, resolved as the contract says (--dir, $LANSYNC_DIR, ~/.lansync); its notes
    /// go to stderr.
    var directory: DataDirectory { DataDirectory.resolve(dir: dir, note: Terminal.note) }
}
