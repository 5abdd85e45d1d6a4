import Foundation
public import LansyncCore
public import LansyncIdentity
public import LansyncNode
import LansyncReplica
public import LansyncStore
import LansyncTransport

/// A real `Node` over a real SQLite replica in `directory`, with a certificate the cluster
/// issued, and no socket: sessions reach it from memory
/// (``Node/session(inMemoryFrom:payloads:address:send:)``).
public struct InProcessNode: Sendable {
    public let node: Node
    public let store: ReplicaStore
    public let id: NodeID

    public init(directory: String, cluster: ClusterSecret, name: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let issued = try cluster.issueNode(name: name)
        let identity = try TLSIdentity(nodePEM: try issued.pem(), clusterPEM: try cluster.certificatePEM())
        id = identity.nodeID
        store = try ReplicaStore.create(
            path: directory + "/replica.sqlite",
            nodeID: identity.nodeID,
            clusterID: identity.trust.clusterID,
            nodeName: name,
            fingerprint: name,
            lease: WriterLease(directory: directory + "/lease")
        )
        // It signs its writes, as a node does: the recorded sessions carry proofs to mutate.
        store.signing.use(
            NodeKeySigner(
                member: identity.signer,
                cluster: identity.trust.clusterID,
                certificate: identity.certificateDER
            )
        )
        let options = NodeOptions(
            listen: PeerAddress(host: "127.0.0.1", port: 0),
            staticPeers: [],
            controlSocketPath: directory + "/control.sock"
        )
        node = try Node(options: options, store: store, identity: identity, logger: .silent)
    }
}

/// The node's key as the signer of its replica's writes (as the host's `MemberWriteSigner`).
struct NodeKeySigner: WriteSigner {
    let member: MemberSigner
    let cluster: NodeID
    let certificate: [UInt8]
    var publicKey: [UInt8] { member.publicKey }
    func sign(_ bytes: [UInt8]) -> [UInt8]? { member.sign(bytes) }
}
