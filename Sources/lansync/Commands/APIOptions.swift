import ArgumentParser
import LansyncAPI
import LansyncHost
import LansyncNode

/// `--api HOST:PORT` and `--no-api`, shared by `node` and `relay`.
struct APIOptions: ParsableArguments {
    @Option(
        name: .customLong("api"),
        help: ArgumentHelp(
            "Where to serve the local HTTP API (default: 127.0.0.1, port --listen's plus one, skipped with a log line if taken). A non-loopback address lets every machine that reaches it in with the token (Docs/API.md).",
            valueName: "HOST:PORT"
        )
    )
    var address: PeerAddress?
    @Flag(name: .customLong("no-api"), help: "Serve no local API.") var off = false

    func validate() throws {
        if off, address != nil { throw ValidationError("--api and --no-api contradict each other: give one") }
    }

    /// The API to run beside the node on `directory`, or nil with --no-api.
    func service(for directory: DataDirectory, listen: PeerAddress) throws -> DataDirectory.NodeService? {
        guard !off else { return nil }
        let address =
            self.address
            ?? PeerAddress(host: "127.0.0.1", port: listen.port == 0 || listen.port == 65_535 ? 0 : listen.port + 1)
        let server = APIServer(
            host: address.host,
            port: address.port,
            directory: directory,
            token: try directory.apiToken()
        )
        let explicit = self.address != nil
        return { node, store in
            do {
                try await server.run(node: node, store: store) { bound in
                    node.announceAPI(bound)
                    NodeLog.line("local API on http://\(bound)/v1 ('lansync api-token' prints its bearer token)")
                }
            } catch  where !explicit {
                // The default address is taken (another node on this machine, say): the node
                // runs on without an API rather than not at all.
                NodeLog.line("no local API: \(error)")
            }
        }
    }
}

/// `lansync api-token`
struct APITokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-token",
        abstract: "Print the bearer token of this node's local HTTP API.",
        discussion:
            "Made at init (a directory made before the API gets one now), kept in the data directory as api-token (mode 0600). Send it as 'Authorization: Bearer TOKEN'; see Docs/API.md."
    )

    @OptionGroup var data: DataDirectoryOptions

    func run() throws { print(try data.directory.apiToken()) }
}
