import ArgumentParser

/// The `lansync` command: the one binary for the CLI, the node daemon and the relay.
@main
struct Lansync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lansync",
        abstract: "Keep a small database of items in sync across the machines of a LAN.",
        version: "0.1.0"
    )
}
