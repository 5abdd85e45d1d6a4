import ArgumentParser
import LansyncHost

/// `lansync cluster create FILE`: makes a new cluster secret.
struct ClusterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Manage the cluster secret.",
        subcommands: [Create.self, AdmittersCommand.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new cluster secret to FILE (mode 0600).",
            discussion: """
                The secret is the cluster's certificate authority: a machine that holds it admits \
                others. Run 'lansync init --cluster FILE' on the machine (or the few) that should \
                admit; every other machine joins with a code from 'lansync invite' ('lansync join \
                CODE') and never holds the secret. Refuses to overwrite an existing file.
                """
        )

        @Argument(help: "Where to write the secret.") var file: String

        func run() throws {
            let cluster = try ClusterFile.create(at: file)
            print(
                "wrote cluster secret \(file) (cluster \(cluster.text)); run 'lansync init --cluster \(file)' on the machines that admit others, and 'lansync invite' there for the rest"
            )
        }
    }
}
