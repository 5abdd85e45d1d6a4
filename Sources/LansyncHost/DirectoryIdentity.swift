import Foundation
public import LansyncCore
import LansyncIdentity
import LansyncReplica
import LansyncStore

/// Creating a data directory, and the identity rule for copies: a directory remembers where it was
/// created (machine id and canonical path), and a copy takes a new node identity before it writes.
extension DataDirectory {
    /// What ``initialise(clusterSecretFile:name:historyLimit:)`` made.
    public struct Initialised: Sendable {
        public let nodeID: NodeID
        public let nodeName: String
        public let clusterID: NodeID
    }

    /// Creates the replica and this node's identity, issued with the cluster secret in
    /// `clusterSecretFile`. The directory keeps the secret: this machine admits others
    /// (`lansync invite`). Refuses a directory that already holds a replica.
    public func initialise(clusterSecretFile: String, name: String?, historyLimit: Int) throws -> Initialised {
        try refuseExistingReplica()
        let secretText: String
        do { secretText = try String(contentsOfFile: clusterSecretFile, encoding: .utf8) } catch {
            throw HostError(
                "cannot read cluster secret \(clusterSecretFile): check the path ('lansync cluster create FILE' makes one)"
            )
        }
        let secret: ClusterSecret
        do { secret = try ClusterSecret(pem: secretText) } catch { throw HostError("\(clusterSecretFile) is \(error)") }
        let nodeName = name ?? ProcessInfo.processInfo.hostName
        return try create(
            identity: try secret.issueNode(name: nodeName),
            clusterPEM: try secret.pem(),
            clusterID: secret.clusterID,
            historyLimit: historyLimit
        )
    }

    func refuseExistingReplica() throws {
        guard !FileManager.default.fileExists(atPath: replicaPath) else {
            throw StoreError.alreadyInitialised(directory: path)
        }
    }

    /// Writes the directory: the cluster file (`clusterPEM`: the authority's certificate, with
    /// its key only on a machine that admits others), this node's identity, and a new replica.
    func create(identity: NodeIdentity, clusterPEM: String, clusterID: NodeID, historyLimit: Int) throws -> Initialised
    {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw HostError("cannot create \(path): \(error.localizedDescription)")
        }
        // An existing directory keeps its mode through createDirectory: others must not read it.
        for change in tightenPermissions() { note("made it private: \(change)") }
        try SecretFile.write(clusterPEM, to: clusterPath, replace: true)
        try SecretFile.write(try identity.pem(), to: nodePath, replace: true)
        _ = try apiToken()
        do {
            _ = try ReplicaStore.create(
                path: replicaPath,
                nodeID: identity.nodeID,
                clusterID: clusterID,
                nodeName: identity.name,
                fingerprint: fingerprint,
                historyLimit: historyLimit
            )
        } catch {
            SafeFile.removeFile(replicaPath)
            throw error
        }
        return Initialised(nodeID: identity.nodeID, nodeName: identity.name, clusterID: clusterID)
    }

    /// Identifies where this directory lives (machine id and canonical path), so a copy of it is
    /// recognised.
    var fingerprint: String {
        let canonical = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? path
        let real = URL(fileURLWithPath: canonical).resolvingSymlinksInPath().standardizedFileURL.path
        return Self.machineID + ":" + real
    }

    static let machineID: String = {
        for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let id = SystemFile.firstLine(file) { return id }
        }
        return ProcessInfo.processInfo.hostName
    }()

    /// Gives a copied directory a new node identity, issued with the cluster secret it holds. A
    /// machine that cannot admit others cannot issue one: the copy is refused until it has one.
    func reidentify(_ store: ReplicaStore, info: ReplicaInfo) throws {
        guard let secret = try admittingAuthority() else {
            throw HostError(
                "\(path) was copied or moved from where it was created, and this machine cannot give the copy a new identity (it does not hold the cluster's authority key): move it back, or 'lansync init' a new directory there"
            )
        }
        let identity = try secret.issueNode(name: info.nodeName)
        try SecretFile.write(try identity.pem(), to: nodePath, replace: true)
        try store.adoptIdentity(nodeID: identity.nodeID, fingerprint: fingerprint)
        note(
            "\(path) was copied or moved from where it was created; this replica now writes as node \(identity.nodeID.short) (was \(info.nodeID.short)), so the copies never share an id"
        )
    }
}
