import ArgumentParser
import LansyncCore
import LansyncHost
import LansyncIdentity
import LansyncJSON
import LansyncNode
import LansyncStore

/// A length of time as people write it: `90s`, `15m`, `2h`, `1d` (a bare number is seconds).
struct Lifetime: ExpressibleByArgument, Sendable {
    let seconds: Int

    init?(argument: String) {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var text = Substring(argument)
        var unit = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            text = text.dropLast()
        }
        guard let count = Int(text), count > 0, count <= 7 * 86_400 / unit else { return nil }
        seconds = count * unit
    }
}

/// `lansync invite`: a one-time code that lets one new machine join.
struct InviteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print a one-time code that lets one new machine join the cluster.",
        discussion: """
            Run it on a machine that admits others (one that holds the cluster's authority key: the \
            machine that created the cluster, or another initialised with the cluster file). Its \
            node must be running to answer: on the new machine, 'lansync join CODE' makes that \
            machine's own key and receives its certificate; no private key travels. The code holds \
            this machine's address, the cluster's fingerprint and a secret; it works once, and not \
            after it expires. Docs/SECURITY.md.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Option(help: "The name you expect the new machine to have, remembered with the invite.")
    var name: String?
    @Option(help: ArgumentHelp("How long the code works: 90s, 15m, 2h, 1d (at most 7d).", valueName: "TIME"))
    var expires = Lifetime(argument: "15m")!
    @Option(
        help: ArgumentHelp(
            "Where the new machine reaches this one (default: the running node's listening address).",
            valueName: "HOST:PORT"
        )
    )
    var address: PeerAddress?
    @Flag(help: "Print a JSON object: code, expires_at, address, node_running.") var json = false

    func validate() throws {
        if let name, name.isEmpty || name.utf8.count > 64 { throw ValidationError("--name must be 1 to 64 bytes") }
    }

    func run() throws {
        let directory = data.directory
        let invitation = try directory.invite(
            store: try directory.open(),
            name: name,
            expiresIn: expires.seconds,
            address: address
        )
        let code = invitation.code
        let expiry = WallClock.iso8601(milliseconds: invitation.expiresAt)
        let reach = code.host.flatMap { host in code.port.map { "\(host):\($0)" } }
        if json {
            let object: JSON = .object([
                ("code", .string(code.text)),
                ("expires_at", .string(expiry)),
                ("address", reach.map(JSON.string) ?? .null),
                ("node_running", .bool(invitation.nodeRunning)),
            ])
            print(object.text)
            return
        }
        print(code.text)
        Terminal.stderr(
            "On the new machine: lansync join \(code.text)\nThe code works once, until \(expiry)"
                + (reach.map { "; it reaches this machine at \($0)." }
                    ?? "; it holds no address: give it to join with --address HOST:PORT.")
                + (invitation.nodeRunning
                    ? "\n"
                    : "\nNo node runs on \(directory.path) now: start 'lansync node' here before the new machine joins.\n")
        )
    }
}

/// `lansync join CODE`: becomes a member with an invite.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a cluster with a code from 'lansync invite': create this machine's replica and identity.",
        discussion: """
            Makes this machine's key in the data directory, reaches the inviting machine at the \
            address in the code (or --address), checks that it belongs to the cluster the code \
            names, proves the code's secret without sending it, and receives this machine's \
            certificate. The directory then holds this machine's key and certificate and the \
            authority's certificate: this machine cannot admit others. Refuses if the directory \
            already holds a replica. Then run 'lansync node'.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The code 'lansync invite' printed (LSJ1-...).") var code: String
    @Option(help: "A name for this node, shown to people (default: the host name).")
    var name: String?
    @Option(help: ArgumentHelp("Where the inviting machine listens, if not in the code.", valueName: "HOST:PORT"))
    var address: PeerAddress?
    @Option(help: "How many versions of each field to keep for 'history'.")
    var history: Int = ReplicaStore.defaultHistoryLimit

    func validate() throws {
        guard history >= 1 else { throw ValidationError("--history must be at least 1") }
        if let name, name.isEmpty || name.utf8.count > 64 { throw ValidationError("--name must be 1 to 64 bytes") }
    }

    func run() async throws {
        let invite: InviteCode
        do { invite = try InviteCode(text: code) } catch { throw HostError(error.description) }
        let directory = data.directory
        let made = try await directory.join(code: invite, name: name, address: address, historyLimit: history)
        print(
            "joined cluster \(made.clusterID.text) as node \(made.nodeID.text) (\(made.nodeName)) in \(directory.path); start it with 'lansync node'"
        )
    }
}
