import ArgumentParser
import LansyncHost

/// `lansync init --cluster FILE [--name NAME]`: creates this machine's replica and identity.
struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the replica and this node's identity in the data directory.",
        discussion: """
            The directory keeps the cluster file, its key included: this machine admits others \
            ('lansync invite'). Give the file only to the machines you choose; every other machine \
            joins with a code ('lansync join'). Refuses if the directory already holds a replica.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: ArgumentHelp("The cluster secret file ('lansync cluster create' writes one).", valueName: "FILE"))
    var cluster: String
    @OptionGroup var node: NewNodeOptions

    func run() throws {
        let directory = data.directory
        let made = try directory.initialise(clusterSecretFile: cluster, name: node.name, historyLimit: node.history)
        print(
            "initialised node \(made.nodeID.text) (\(made.nodeName)) of cluster \(made.clusterID.text) in \(directory.path)"
        )
    }
}

/// What `init` and `join` ask of a new node: its name and how much history it keeps.
struct NewNodeOptions: ParsableArguments {
    @Option(help: "A name for this node, shown to people (default: for join, the invite's name; else the host name).")
    var name: String?
    @Option(help: "How many versions of each field to keep for 'history'.")
    var history: Int = DataDirectory.defaultHistoryLimit

    func validate() throws {
        guard history >= 1 else { throw ValidationError("--history must be at least 1") }
        if let name, let problem = MachineName.problem(with: name) { throw ValidationError("--name: \(problem)") }
    }
}
