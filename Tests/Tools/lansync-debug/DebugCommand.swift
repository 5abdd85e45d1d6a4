public import ArgumentParser
import Foundation
import LansyncCore
import LansyncHost
public import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncTransport
import LansyncWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// `lansync-debug`: tools for lansync's own tests, never shipped (the Debian package holds
/// `lansync` alone). They reach below the host on purpose: to play a member that sends what no
/// lansync would, to make edits in a loop for the crash test, and to run SQLite's own check.
@main
struct DebugCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lansync-debug",
        abstract: "Tools for lansync's own tests.",
        subcommands: [EditLoop.self, Integrity.self, Raw.self, RogueMember.self, FuzzSessions.self]
    )

    /// The `--dir` option every tool takes.
    struct DataDirectoryOptions: ParsableArguments {
        @Option(name: .long, help: ArgumentHelp("The data directory.", valueName: "DIR")) var dir: String

        var directory: DataDirectory { DataDirectory(path: dir) }
    }

    /// Makes COUNT edits to one field, one transaction each, printing `COUNTER VALUE` after each
    /// commit: exactly the edits the process acknowledged, for the crash test.
    struct EditLoop: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "edit-loop")
        @OptionGroup var data: DataDirectoryOptions
        @Argument var id: String
        @Argument var count: Int
        @Option var tag: String = "w"

        func run() throws {
            let store = try data.directory.open()
            let itemID = try AssignmentParser.parseItemID(id)
            for i in 0..<count {
                let value = "\(tag)-\(i)"
                let edit = ItemEdit.update([.set(FieldName(unchecked: "n"), .string(value))])
                let dot = try store.apply(edit, to: itemID, wallMilliseconds: WallClock.milliseconds)
                let line = "\(dot.counter) \(value)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        }
    }

    /// Connects to a node as this directory's node (a real TLS handshake), sends standard input's
    /// bytes as they are, and prints the kinds of the frames that come back until the node closes
    /// the connection: how the tests play a cluster member that sends malformed frames.
    struct Raw: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "raw")
        @OptionGroup var data: DataDirectoryOptions
        @Option var peer: PeerAddress
        @Option var seconds: Double = 5

        func run() async throws {
            let identity = try data.directory.tlsIdentity()
            let input = Array(FileHandle.standardInput.readDataToEndOfFile())
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let transport = try Transport(identity: identity, group: group)
            try await DebugCommand.converse(transport, peer: peer, sending: [input], seconds: seconds)
            try await group.shutdownGracefully()
        }
    }

    /// Connects to `peer` as this directory's node (a real TLS handshake), writes `chunks` in
    /// order, and prints the kind of each frame that comes back (an error with its code and
    /// words), then `closed` if the node closed the connection within `seconds`, else `open`.
    static func converse(
        _ transport: Transport,
        peer: PeerAddress,
        sending chunks: [[UInt8]],
        seconds: Double
    )
        async throws
    {
        let channel = try await transport.connectRaw(host: peer.host, port: peer.port)
        let received = NIOLockedValueBox<[UInt8]>([])
        let closedByPeer = NIOLockedValueBox(false)
        try? await channel.executeThenClose { inbound, outbound in
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    do {
                        for try await chunk in inbound {
                            received.withLockedValue { $0 += chunk.readableBytesView }
                        }
                        closedByPeer.withLockedValue { $0 = true }
                    } catch {
                        closedByPeer.withLockedValue { $0 = !(error is CancellationError) }
                    }
                }
                tasks.addTask {
                    for chunk in chunks {
                        do { try await outbound.write(ByteBuffer(bytes: chunk)) } catch { return }
                    }
                    try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                }
                await tasks.next()
                tasks.cancelAll()
            }
        }
        var bytes = received.withLockedValue { $0 }[...]
        while bytes.count >= 4, let length = try? Frame.payloadLength(prefix: Array(bytes.prefix(4))),
            bytes.count >= 4 + length
        {
            let payload = Array(bytes.dropFirst(4).prefix(length))
            bytes = bytes.dropFirst(4 + length)
            switch try? MessageCoder.decode(payload) {
            case .error(let e)?: print("error \(e.code.name): \(e.message)")
            case let message?: print(message.kind)
            case nil: print("undecodable")
            }
        }
        print(closedByPeer.withLockedValue { $0 } ? "closed" : "open")
    }

    /// Prints `PRAGMA integrity_check`.
    struct Integrity: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "integrity")
        @OptionGroup var data: DataDirectoryOptions

        func run() throws {
            let store = try data.directory.open()
            print(try store.integrityCheck())
        }
    }
}

/// Parses `HOST:PORT` arguments.
extension PeerAddress: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}
