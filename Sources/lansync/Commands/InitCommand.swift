import ArgumentParser
import Foundation
import LansyncCore
import LansyncIdentity
import LansyncStore

/// `lansync init --cluster FILE [--name NAME]`: creates this machine's replica and identity.
struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the replica and this node's identity in the data directory.",
        discussion: "Refuses if the directory already holds a replica."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: ArgumentHelp("The cluster secret file ('lansync cluster create' writes one).", valueName: "FILE"))
    var cluster: String
    @Option(help: "A name for this node, shown to people (default: the host name).")
    var name: String?
    @Option(help: "How many versions of each field to keep for 'history'.")
    var history: Int = ReplicaStore.defaultHistoryLimit

    func validate() throws {
        guard history >= 1 else { throw ValidationError("--history must be at least 1") }
        if let name, name.isEmpty || name.utf8.count > 64 { throw ValidationError("--name must be 1 to 64 bytes") }
    }

    func run() throws {
        let directory = data.directory
        guard !FileManager.default.fileExists(atPath: directory.replicaPath) else {
            throw CLIError(StoreError.alreadyInitialised(directory: directory.path))
        }
        let secretText: String
        do { secretText = try String(contentsOfFile: cluster, encoding: .utf8) } catch {
            throw CLIError("cannot read cluster secret \(cluster): check the path ('lansync cluster create FILE' makes one)")
        }
        let secret: ClusterSecret
        do { secret = try ClusterSecret(pem: secretText) } catch { throw CLIError("\(cluster) is \(error.message)") }

        do {
            try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIError("cannot create \(directory.path): \(error.localizedDescription)")
        }
        let nodeName = name ?? ProcessInfo.processInfo.hostName
        let identity = try secret.issueNode(name: nodeName)
        try FileIO.writeSecret(try secret.pem(), to: directory.clusterPath, replace: true)
        try FileIO.writeSecret(try identity.pem(), to: directory.nodePath, replace: true)
        do {
            _ = try ReplicaStore.create(
                path: directory.replicaPath, nodeID: identity.nodeID, clusterID: secret.clusterID,
                nodeName: nodeName, fingerprint: directory.fingerprint, historyLimit: history)
        } catch {
            try? FileManager.default.removeItem(atPath: directory.replicaPath)
            throw CLIError(error)
        }
        print("initialised node \(identity.nodeID.text) (\(nodeName)) of cluster \(secret.clusterID.text) in \(directory.path)")
    }
}
