import Foundation
import HTTPTypes
import Hummingbird
import LansyncNode
import LansyncTestSupport
import Logging
import NIOCore
import NIOEmbedded

@testable import LansyncAPI
@testable import LansyncHost

/// The local API in this process: a real data directory and replica, a node that is built but not
/// started (the API serves its replica and status as a running node's), and the router the server
/// answers with, driven without a socket.
struct InProcessAPI {
    let directory: DataDirectory
    let node: RunningNode
    let token: String
    private let responder: RouterResponder<BasicRequestContext>

    init(_ label: String) throws {
        let root = makeTemporaryDirectory(label)
        let cluster = root + "/cluster.pem"
        _ = try ClusterFile.create(at: cluster)
        let directory = DataDirectory(path: root + "/a")
        _ = try directory.initialise(clusterSecretFile: cluster, name: "a", historyLimit: 100)
        let store = try directory.open()
        var options = NodeOptions(listen: PeerAddress(host: "127.0.0.1", port: 0), staticPeers: [])
        options.controlSocketPath = directory.controlSocketPath
        let node = try Node(
            options: options,
            store: store,
            identity: try directory.tlsIdentity(),
            logger: Logger(label: "test")
        )
        self.directory = directory
        self.node = RunningNode(node, store: store, directory: directory)
        token = try directory.apiToken()
        let server = try APIServer(host: "127.0.0.1", port: 0, directory: directory)
        responder = server.router(serving: self.node).buildResponder()
    }

    /// An answer: its status, headers and body text.
    struct Answer {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: String
    }

    /// Sends one request (with the token unless `authorized` is false) and collects the answer.
    func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        body: String? = nil,
        authorized: Bool = true
    ) async throws -> Answer {
        var head = HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1", path: path)
        if authorized { head.headerFields[.authorization] = "Bearer \(token)" }
        if body != nil { head.headerFields[.contentType] = "application/json" }
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(string: body ?? "")))
        let context = BasicRequestContext(
            source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: Logger(label: "test"))
        )
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        let collected = Collected()
        try await response.body.write(Collector(into: collected))
        return Answer(status: response.status, headers: response.headers, body: String(buffer: collected.buffer))
    }

    /// A response body, as a writer gathered it.
    final class Collected {
        var buffer = ByteBuffer()
    }

    /// Gathers a response body (the body consumes its writer, so it writes into a box).
    struct Collector: ResponseBodyWriter {
        let into: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            into.buffer.writeBuffer(&buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
