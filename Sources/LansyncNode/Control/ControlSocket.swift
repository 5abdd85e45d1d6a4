import Foundation
import LansyncCore
import LansyncJSON
import NIOCore
import NIOPosix

/// The node's local control socket (`DIR/control.sock`): the CLI nudges the node after an edit
/// (so the edit is pushed at once) and asks it for its status. One JSON request line, one JSON
/// answer line. Only processes that can open the data directory (mode 0700) can reach it.
enum ControlServer {
    static func serve(
        path: String,
        group: any EventLoopGroup,
        handle: @escaping @Sendable (ControlRequest?) async -> String
    ) async throws {
        let server = try await ServerBootstrap(group: group)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await withThrowingDiscardingTaskGroup { tasks in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    tasks.addTask {
                        try? await connection.executeThenClose { inbound, outbound in
                            var line: [UInt8] = []
                            for try await chunk in inbound {
                                line += chunk.readableBytesView
                                if line.contains(0x0a) || line.count > 4096 { break }
                            }
                            let request = ControlRequest(line: Array(line.prefix { $0 != 0x0a }))
                            let answer = await handle(request)
                            try await outbound.write(ByteBuffer(string: answer + "\n"))
                        }
                    }
                }
            }
        }
    }
}

/// The node's nudge socket (`DIR/nudge.sock`, beside the control socket): a datagram socket on
/// which `lansync` tells the node of an edit it committed, one datagram (`nudge`) and no answer.
/// A nudge over the control socket costs a connection (the node accepts it and sets up a channel
/// before it reads the line) and two wake-ups of the node in turn; a datagram is read in one,
/// about half a millisecond less on an edit's way to the peers on a 2-core machine. If the
/// socket is gone (its channel closed on an error), `lansync` nudges over the control socket.
enum NudgeServer {
    /// The nudge socket beside the control socket at `control`.
    static func path(control: String) -> String { ControlClient.nudgeSocketPath(control: control) }

    /// Serves `path` until cancelled: `nudged` runs on the event loop for each nudge datagram.
    static func serve(path: String, group: any EventLoopGroup, nudged: @escaping @Sendable () -> Void) async throws {
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NudgeHandler(nudged: nudged))
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
            .get()
        try await withTaskCancellationHandler {
            try await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// Calls `nudged` for each datagram that says `nudge`; anything else is dropped.
private final class NudgeHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let nudged: @Sendable () -> Void

    init(nudged: @escaping @Sendable () -> Void) { self.nudged = nudged }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if unwrapInboundIn(data).data.readableBytesView.elementsEqual(ControlClient.nudgeDatagram) { nudged() }
    }
}

/// The CLI's side of the control socket: plain blocking POSIX calls, each request bounded by one
/// deadline (a second for a nudge, `status --wait` for a status), so a command never hangs on a
/// stuck node.
public enum ControlClient {
    /// What asking for the status on a control socket came to.
    public enum StatusAnswer: Sendable {
        /// The node answered.
        case answered(NodeStatus)
        /// Nothing listens on the socket: no node runs on the directory.
        case noNode
        /// A node is there and gave no status within the time allowed: it is busy (its first
        /// status reads every item for the digest) or stuck, or its answer was no status at all.
        case notAnswering
        /// The node answered that it could not make its status (`{"error": MESSAGE}`: the replica
        /// could not be read, say), with its message.
        case failed(String)
    }

    /// Asks the node on `path` for its status, telling a directory without a node from a node
    /// that did not answer in time, and both from a node that answered with an error.
    public static func statusAnswer(path: String, timeoutSeconds: Int) -> StatusAnswer {
        switch request(.status, path: path, timeoutSeconds: timeoutSeconds) {
        case .noNode: .noNode
        case .noAnswer: .notAnswering
        case .answer(let line):
            if let status = try? NodeStatus(json: line) {
                .answered(status)
            } else if case .string(let message)? = (try? JSON(parsing: String(decoding: line, as: UTF8.self)))?["error"]
            {
                .failed(TerminalText.escaped(message))
            } else {
                .notAnswering
            }
        }
    }

    /// Tells a running node that the replica changed, so it pushes the change at once. Best
    /// effort: without a node, or if it does not answer within a second, nothing happens (a
    /// running node notices within a second anyway).
    public static func nudge(path: String) {
        if sendNudgeDatagram(to: NudgeServer.path(control: path)) { return }
        // No node, or one without a nudge socket (started before it had one).
        guard FileManager.default.fileExists(atPath: path) else { return }
        request(.nudge, path: path, timeoutSeconds: 1)
    }

    /// The node's nudge socket (``NudgeServer``), beside its control socket at `control`.
    public static func nudgeSocketPath(control: String) -> String {
        guard let slash = control.lastIndex(of: "/") else { return "nudge.sock" }
        return control[...slash] + "nudge.sock"
    }

    /// What a nudge datagram says.
    static let nudgeDatagram = Array("nudge".utf8)

    /// Sends a nudge datagram to the node's nudge socket at `path`, then gives up the processor
    /// (a command that went on to exit kept the node from reading the datagram, up to a
    /// millisecond on a 2-core machine); false if no node reads that socket.
    static func sendNudgeDatagram(to path: String, saying datagram: [UInt8] = nudgeDatagram) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // An address of its own (Linux's autobind: a unique abstract name): NIO refuses a
        // datagram from an unnamed socket as an unsupported address, and closes the channel.
        var local = sockaddr()
        local.sa_family = sa_family_t(AF_UNIX)
        guard bind(fd, &local, socklen_t(MemoryLayout<sa_family_t>.size)) == 0 else { return false }
        let sent = withUnixAddress(path) { address, length in
            datagram.withUnsafeBytes {
                sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), address, length)
            }
        }
        guard sent == datagram.count else { return false }
        sched_yield()
        return true
    }

    /// Calls `body` with `path` as a Unix socket address; nil if the path is too long for one.
    private static func withUnixAddress<T>(
        _ path: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// Tells a running node that the cluster statements in the replica changed (a revocation, a
    /// new admitter set), so it acts on them and passes them on at once. Best effort, like
    /// ``nudge(path:)``.
    public static func statementsChanged(path: String) {
        guard FileManager.default.fileExists(atPath: path) else { return }
        request(.statements, path: path, timeoutSeconds: 1)
    }

    /// What one request on the control socket came to.
    enum Reply {
        /// Nothing listens on the socket.
        case noNode
        /// A node is there but gave no whole answer line within the time allowed: it did not take
        /// the connection (a full queue), or took it and closed, or said nothing whole.
        case noAnswer
        /// The answer line (without its line break).
        case answer([UInt8])
    }

    /// Sends one request and waits at most `timeoutSeconds` in all for the answer line.
    @discardableResult
    static func request(_ op: ControlRequest.Op, path: String, timeoutSeconds: Int = 5) -> Reply {
        // One deadline for the connection, the request and the whole answer: a receive timeout
        // alone restarts at every chunk, and a full accept queue makes `connect` itself wait.
        let deadline = ContinuousClock.now + .seconds(max(1, timeoutSeconds))
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .noNode }
        defer { close(fd) }
        guard setTimeouts(fd, until: deadline) else { return .noAnswer }
        guard let connected = withUnixAddress(path, { connect(fd, $0, $1) }) else { return .noNode }
        guard connected == 0 else {
            // Only a missing socket or one nobody listens on means no node: a full queue
            // (EAGAIN after the wait) is a node that does not take requests.
            return errno == ENOENT || errno == ECONNREFUSED ? .noNode : .noAnswer
        }
        let line = Array(ControlRequest(op: op).line.utf8) + [0x0a]
        // MSG_NOSIGNAL: a node that closes early must not kill the CLI (its edit is already saved).
        guard line.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else {
            return .noAnswer
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !answer.contains(0x0a) {
            guard setTimeouts(fd, until: deadline) else { return .noAnswer }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // A stop and resume (Ctrl-Z, fg) interrupts a receive with a timeout: wait on.
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return .noAnswer }
            answer += buffer.prefix(n)
        }
        return .answer(Array(answer.prefix { $0 != 0x0a }))
    }

    /// Sets `fd`'s send and receive timeouts to the time left before `deadline`; false once it
    /// has passed. Never zero: a zero timeout means no timeout at all.
    private static func setTimeouts(_ fd: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        let (seconds, attoseconds) = left.components
        var wait = timeval(tv_sec: Int(seconds), tv_usec: Int(max(1000, attoseconds / 1_000_000_000_000)))
        let size = socklen_t(MemoryLayout<timeval>.size)
        return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, size) == 0
            && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, size) == 0
    }
}

/// A request on the control socket, one JSON line: `{"op":"nudge"}`, `{"op":"statements"}` or
/// `{"op":"status"}`.
struct ControlRequest: Sendable {
    enum Op: String, Sendable {
        /// The replica changed: push it now. Answered `{"ok":true}`.
        case nudge
        /// The cluster statements in the replica changed: read them again. Answered `{"ok":true}`.
        case statements
        /// Answered with ``NodeStatus``'s JSON, or `{"error":"..."}`.
        case status
    }

    var op: Op

    init(op: Op) { self.op = op }

    /// Reads a request line; nil if it is none.
    init?(line: [UInt8]) {
        guard case .string(let name)? = (try? JSON(parsing: String(decoding: line, as: UTF8.self)))?["op"],
            let op = Op(rawValue: name)
        else { return nil }
        self.op = op
    }

    /// The request as one JSON line (without its line break).
    var line: String { JSON.object([("op", .string(op.rawValue))]).text }
}
