import ArgumentParser
import Foundation
import LansyncHost

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

    /// As it is typed: `15m`, not the type's own description.
    var defaultValueDescription: String {
        for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] where seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
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
        if let name, let problem = MachineName.problem(with: name) { throw ValidationError("--name: \(problem)") }
    }

    func run() throws {
        let directory = data.directory
        let invitation = try LocalReplica(directory).invite(name: name, expiresIn: expires.seconds, address: address)
        let code = invitation.code
        let expiry = WallClock.iso8601(milliseconds: invitation.expiresAt)
        let reach = invitation.reach
        if json {
            print(invitation.jsonText)
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
    @OptionGroup var node: NewNodeOptions
    @Option(help: ArgumentHelp("Where the inviting machine listens, if not in the code.", valueName: "HOST:PORT"))
    var address: PeerAddress?

    func run() async throws {
        let invite: InviteCode
        do { invite = try InviteCode(text: code) } catch { throw HostError(error.description) }
        let directory = data.directory
        let made = try await directory.join(code: invite, name: node.name, address: address, historyLimit: node.history)
        print(
            Render.line(
                "joined cluster \(made.clusterID.text) as node \(made.nodeID.text) (\(made.nodeName)) in \(directory.path); start it with 'lansync node'"
            )
        )
    }
}

/// `lansync revoke NODE|NAME`: shuts a member out.
struct RevokeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Shut a member out of the cluster: every member refuses it once the revocation reaches it.",
        discussion: """
            Run it on a machine that admits others. It signs a revocation with the cluster's \
            authority key; the running node refuses the member at once and passes the revocation \
            on in every session (directly and through the relay), and each member that receives \
            it refuses the revoked machine from then on. Revocation cannot be undone: the machine \
            joins again with a new invite, as a new node. Docs/SECURITY.md.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The member: its name, its node id, or a unique start of it (see 'lansync members').")
    var member: String
    @Option(help: "Why, shown to people with the revocation (at most 256 bytes).")
    var reason: String = ""

    func run() throws {
        let revocation = try LocalReplica(data.directory).revoke(member, reason: reason)
        print(
            Render.line(
                "revoked node \(revocation.node.text) (\(revocation.name.isEmpty ? "unnamed" : revocation.name)) at \(WallClock.iso8601(milliseconds: revocation.at)); members refuse it once the revocation reaches them"
            )
        )
    }
}

/// `lansync members`: who is in the cluster, as far as this machine knows; `members forget`.
struct MembersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "List the members this machine knows, set what one may do, or forget one that is gone for good.",
        subcommands: [MembersList.self, MembersRole.self, MembersForget.self],
        defaultSubcommand: MembersList.self
    )
}

/// `lansync members forget NODE`: a machine gone for good.
struct MembersForget: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Say a member is gone for good: it no longer holds collection back nor keeps edits SYNCING.",
        discussion: """
            For a machine that died or was wiped. This machine stops waiting for it: its edits \
            count as SYNCED once the remaining members have them, and deleted items are \
            collected without it. If the machine comes back after all, its old state is \
            refused: it rejoins from a snapshot (its own offline edits are re-issued, edits to \
            items deleted meanwhile are dropped) and is a member again. (To shut a machine out, \
            use 'lansync revoke'.)
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The member: its name, node id, or a unique start of the id.") var node: String

    func run() throws {
        let member = try LocalReplica(data.directory).forget(node)
        print(
            Render.line(
                "forgot \(member.name ?? "unnamed") (\(member.nodeID.text)): it no longer counts for SYNCED or holds collection back"
            )
        )
    }
}

/// `lansync members role NODE reader|writer|admitter`: what a member may do.
struct MembersRole: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role",
        abstract: "Set what a member may do: reader (receives everything, writes nothing), writer, or admitter.",
        discussion: """
            Run it on a machine that admits others. It signs the role with the cluster's \
            authority key; the running node passes it on in every session, like a revocation. A \
            reader's writes after this point (what this machine holds of it) are refused by every \
            member, wherever they arrive, and its own node refuses local edits, its page and API \
            are read-only; made a writer again, it writes under a new writer id (what it wrote \
            while a reader stays refused). An admitter is a writer the set of admitting machines \
            names (give it the cluster file to hold the key); making an admitting machine a \
            reader or a writer takes it out of the set, and it removes the key. Docs/SECURITY.md, \
            "Roles".
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The member: its name, its node id, or a unique start of it (see 'lansync members').")
    var member: String
    @Argument(help: "reader, writer or admitter.") var role: MemberRole

    func run() throws {
        let change = try LocalReplica(data.directory).setRole(member, role: role)
        let name = change.member.name ?? change.member.nodeID.short
        guard let statement = change.statement else {
            print(Render.line("\(name) (\(change.member.nodeID.text)) is \(role.withArticle) already; nothing changed"))
            return
        }
        let what =
            switch role {
            case .reader: "its later writes are refused and its node refuses edits"
            case .writer: "it may write again"
            case .admitter: "it may write and hold the authority's key"
            }
        print(
            Render.line(
                "\(name) (\(change.member.nodeID.text)) is \(role.withArticle) since \(WallClock.iso8601(milliseconds: statement.at)): \(what) once the statement reaches it and the others"
                    + (change.admitters.map {
                        "; the admitting machines are now \($0.nodes.map(\.short).joined(separator: ", "))"
                    } ?? "")
            )
        )
    }
}

/// `lansync members` (`members list`): the members, with their state.
struct MembersList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the members this machine knows: active or revoked (with why and when), and who admitted them.",
        discussion:
            "A machine knows the peers it met or heard of, every machine that joined with an invite (each admission is signed and travels with every sync), and every revocation it holds."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(
        help:
            "Print a JSON array: node_id, name, this_node, state, revoked_at, revoked_by, reason, admitted_here_at, admitted_at, admitted_by, admits, last_sync, last_seen, forgotten_at, role, role_since, role_by (state: active, away, forgotten, revoked; role: reader, writer, admitter)."
    )
    var json = false

    func run() throws {
        let members = try LocalReplica(data.directory).members()
        let time = Self.time(_:)
        if json {
            print(members.jsonText)
            return
        }
        var rows = [["NODE", "NAME", "STATE", "ROLE", "ADMITS", "SINCE", "ADMITTED", "LAST SYNC"]]
        let names = Dictionary(members.map { ($0.nodeID, $0.name ?? $0.nodeID.short) }) { a, _ in a }
        for m in members {
            let admitted = m.admission.map { a in
                "\(time(a.at)?.prefix(16) ?? "-") by \(a.by == m.nodeID ? "itself" : names[a.by] ?? a.by.short)"
            }
            let state =
                m.revocation.map { "revoked" + ($0.reason.isEmpty ? "" : ": \($0.reason)") }
                ?? (m.isThisNode
                    ? "active (this node)"
                    : m.forgottenAt.map { "forgotten " + String((time($0) ?? "").prefix(10)) }
                        ?? (m.isAway ? "away since " + String((time(m.seenAt) ?? "?").prefix(10)) : "active"))
            rows.append([
                m.nodeID.short, m.name ?? "?", state, m.revocation == nil ? m.role.description : "-",
                m.admits.map { $0 ? "yes" : "no" } ?? "-",
                String((time(m.revocation?.at) ?? "-").prefix(19)),
                admitted ?? String((time(m.admittedHere) ?? "-").prefix(16)),
                String((time(m.lastSync) ?? "-").prefix(19)),
            ])
        }
        rows = rows.map { $0.map(Render.line) }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        for row in rows {
            print(
                row.enumerated().map { c, cell in
                    c == row.count - 1 ? cell : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                }
                .joined(separator: "  ")
            )
        }
    }

    static func time(_ ms: UInt64?) -> String? { ms.map { WallClock.iso8601(milliseconds: $0) } }
}

/// `lansync cluster admitters NODE...`: which machines keep the authority's key.
struct AdmittersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admitters",
        abstract: "Name the machines that keep the cluster's authority key; every other member removes it.",
        discussion: """
            Run it on a machine that holds the key, naming it among the others (by name, node id, \
            or a unique start of the id, as 'lansync members' lists them). The set is signed with \
            the key and passed on in every session; each member not named that still holds the \
            key (every machine of a cluster made before invites does) removes it from its data \
            directory when the set reaches it, and admits no one from then on. The latest set \
            counts. Docs/SECURITY.md, "Existing clusters".
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The machines that keep the key, this one among them.") var machines: [String]

    func validate() throws {
        guard !machines.isEmpty else { throw ValidationError("name at least this machine") }
    }

    func run() throws {
        let set = try LocalReplica(data.directory).setAdmitters(machines)
        print(
            "only \(set.nodes.map(\.short).joined(separator: ", ")) keep the cluster's authority key from now on; every other member removes it when the set reaches it"
        )
    }
}
