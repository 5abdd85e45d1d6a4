import Foundation
public import LansyncCore
import LansyncIdentity
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
    /// `clusterSecretFile`. Refuses a directory that already holds a replica.
    public func initialise(clusterSecretFile: String, name: String?, historyLimit: Int) throws -> Initialised {
        guard !FileManager.default.fileExists(atPath: replicaPath) else {
            throw StoreError.alreadyInitialised(directory: path)
        }
        let secretText: String
        do { secretText = try String(contentsOfFile: clusterSecretFile, encoding: .utf8) } catch {
            throw HostError(
                "cannot read cluster secret \(clusterSecretFile): check the path ('lansync cluster create FILE' makes one)"
            )
        }
        let secret: ClusterSecret
        do { secret = try ClusterSecret(pem: secretText) } catch { throw HostError("\(clusterSecretFile) is \(error)") }
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw HostError("cannot create \(path): \(error.localizedDescription)")
        }
        let nodeName = name ?? ProcessInfo.processInfo.hostName
        let identity = try secret.issueNode(name: nodeName)
        try SecretFile.write(try secret.pem(), to: clusterPath, replace: true)
        try SecretFile.write(try identity.pem(), to: nodePath, replace: true)
        do {
            _ = try ReplicaStore.create(
                path: replicaPath,
                nodeID: identity.nodeID,
                clusterID: secret.clusterID,
                nodeName: nodeName,
                fingerprint: fingerprint,
                historyLimit: historyLimit
            )
        } catch {
            try? FileManager.default.removeItem(atPath: replicaPath)
            throw error
        }
        return Initialised(nodeID: identity.nodeID, nodeName: nodeName, clusterID: secret.clusterID)
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
            if let id = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines
            ), !id.isEmpty {
                return id
            }
        }
        return ProcessInfo.processInfo.hostName
    }()

    /// Gives a copied directory a new node identity, issued with the cluster secret it holds.
    func reidentify(_ store: ReplicaStore, info: ReplicaInfo) throws {
        let secret: ClusterSecret
        do {
            secret = try ClusterSecret(pem: String(contentsOfFile: clusterPath, encoding: .utf8))
        } catch let error as IdentityError {
            throw HostError("\(clusterPath): \(error)")
        } catch {
            throw HostError("cannot read \(clusterPath): restore it from the cluster secret file")
        }
        let identity = try secret.issueNode(name: info.nodeName)
        try SecretFile.write(try identity.pem(), to: nodePath, replace: true)
        try store.adoptIdentity(nodeID: identity.nodeID, fingerprint: fingerprint)
        note(
            "\(path) was copied or moved from where it was created; this replica now writes as node \(identity.nodeID.short) (was \(info.nodeID.short)), so the copies never share an id"
        )
    }
}
