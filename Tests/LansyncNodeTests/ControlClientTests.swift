import Foundation
import Testing

@testable import LansyncNode

/// What `lansync status` makes of the control socket (``ControlClient/statusAnswer(path:timeoutSeconds:)``):
/// a directory without a node, a node that does not answer, and a node that answers with its
/// error, each told from the others. The socket's other end is a few lines of POSIX here, since
/// a real node cannot be made to fail its status on purpose.
@Suite struct ControlClientTests {
    /// A Unix socket listening at `path` that answers the first request with `answer` (nil: reads
    /// the request and says nothing until it is closed).
    final class FakeNode: Sendable {
        let fd: Int32
        let path: String

        init(path: String, answer: String?) throws {
            self.path = path
            // A socket file left by an earlier run that crashed would make the bind fail.
            unlink(path)
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                buffer.copyBytes(from: Array(path.utf8) + [0])
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0, listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
            let listener = fd
            Thread.detachNewThread {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 256)
                _ = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if let answer {
                    let line = Array((answer + "\n").utf8)
                    _ = line.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    close(client)
                } else {
                    // Holds the connection open, as a busy node does, until the test is done.
                    _ = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    close(client)
                }
            }
        }

        deinit {
            close(fd)
            unlink(path)
        }
    }

    static func socketPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lansync-cc-\(name)-\(getpid()).sock").path
    }

    @Test func noSocketIsNoNode() {
        guard case .noNode = ControlClient.statusAnswer(path: Self.socketPath("none"), timeoutSeconds: 1) else {
            Issue.record("a missing socket is no node")
            return
        }
    }

    @Test func aNodeThatAnswersWithAnErrorSaysWhich() throws {
        let node = try FakeNode(path: Self.socketPath("error"), answer: #"{"error":"the replica could not be read"}"#)
        let answer = ControlClient.statusAnswer(path: node.path, timeoutSeconds: 5)
        guard case .failed(let message) = answer else {
            Issue.record("expected the node's error, got \(answer)")
            return
        }
        #expect(message == "the replica could not be read")
    }

    @Test func aNodeThatSaysNothingDoesNotAnswer() throws {
        let node = try FakeNode(path: Self.socketPath("silent"), answer: nil)
        guard case .notAnswering = ControlClient.statusAnswer(path: node.path, timeoutSeconds: 1) else {
            Issue.record("a node that takes the request and says nothing does not answer")
            return
        }
    }

    @Test func anAnswerThatIsNoStatusDoesNotAnswer() throws {
        let node = try FakeNode(path: Self.socketPath("garbled"), answer: #"{"ok":true}"#)
        guard case .notAnswering = ControlClient.statusAnswer(path: node.path, timeoutSeconds: 5) else {
            Issue.record("an answer that is no status and no error is no answer")
            return
        }
    }
}
