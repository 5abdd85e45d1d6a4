import ArgumentParser
import LansyncAPI
import LansyncHost

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
    /// Its metrics backend (Prometheus, served at /metrics) is bootstrapped here, before the node
    /// makes its counters.
    /// The API as a service beside the node, unless --no-api.
    func service(for directory: DataDirectory, listen: PeerAddress, logger: Logger) throws -> DataDirectory.NodeService?
    {
        guard !off else { return nil }
        return try APIServer.nodeService(at: address, listen: listen, directory: directory, logger: logger)
    }
}

struct APITokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-token",
        abstract: "Print the bearer token of this node's local HTTP API, or replace it.",
        discussion: """
            Made at init (a directory made before the API gets one now), kept in the data directory \
            as api-token (mode 0600). Send it as 'Authorization: Bearer TOKEN'; see Docs/API.md. \
            --rotate replaces it: the old token is refused from the next request on, by a running \
            node too. The web page's logins are sessions of their own ('status' lists them), which \
            stay until each logs out.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Replace the token with a new one, and print it.") var rotate = false

    func run() throws {
        print(rotate ? try data.directory.rotateAPIToken() : try data.directory.apiToken())
    }
}

/// `lansync ui`
struct UICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Print a link that opens this node's web page, logged in.",
        discussion:
            "The running node serves the page on its API address. The link carries a one-time code that logs the page in once, within 5 minutes; after that, log in with the token 'lansync api-token' prints. See Docs/UI.md."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Print {\"url\": ...} as JSON.") var json = false

    func run() throws {
        let directory = data.directory
        let status: NodeStatus
        switch directory.runningNodeStatus() {
        case .answered(let live):
            status = live
        case .noNode:
            throw CLIError(
                "no node is running on \(directory.path): start one with 'lansync node', which serves the page"
            )
        case .notAnswering:
            throw CLIError(
                "the node on \(directory.path) did not answer within \(StatusWait.seconds) s (busy or stuck): try again, or look at its log"
            )
        case .failed(let message):
            throw CLIError(
                "the node on \(directory.path) could not make its status (\(message)): its log says more"
            )
        }
        guard let api = status.api else {
            throw CLIError(
                "the node on \(directory.path) serves no API, so no page: restart it without --no-api (or with --api HOST:PORT)"
            )
        }
        let code = try directory.makeUILoginCode()
        // The code goes after '#', which a browser never sends: it stays out of every log and
        // Referer, and the page posts it once to /v1/login.
        let url = "http://\(Self.urlAuthority(api))/#login=\(code)"
        print(json ? #"{"url":"\#(url)"}"# : url)
    }

    /// `HOST:PORT` as a URL's authority: an IPv6 host goes in brackets.
    static func urlAuthority(_ address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        let host = address[..<colon]
        return host.contains(":") ? "[\(host)]\(address[colon...])" : address
    }
}
