import ArgumentParser
import LansyncHost

/// `lansync status`
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show this node, its replica and its peers.",
        discussion:
            "Works whether or not the node runs: it asks a running node, and reads the replica otherwise. 'digest' is equal on replicas that have converged."
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(help: "Print one JSON object.") var json = false
    @Option(
        help: ArgumentHelp(
            "Seconds to wait for a running node's answer before showing what the replica file says.",
            valueName: "seconds"
        )
    )
    var wait = StatusWait.seconds

    func validate() throws {
        guard (1...3600).contains(wait) else {
            throw ValidationError("--wait takes 1 to 3600 seconds, not \(wait)")
        }
    }

    func run() throws {
        if data.directory.keepsReplicaInPostgres { return try runningRelayOnPostgres() }
        let replica = try LocalReplica(data.directory)
        let status = try replica.status(waitingSeconds: wait)
        if !status.answering {
            Terminal.note(
                "the node running on \(data.directory.path) did not answer within \(wait) s (busy or stuck): showing what the replica file says; its log says more, and '--wait' waits longer"
            )
        }
        // Membership as this directory holds it (the running node keeps the same files).
        let members = (try? replica.members()) ?? []
        let sessions = data.directory.uiSessions()
        if json {
            print(status.jsonText(members: members, sessions: sessions))
        } else {
            let revoked = members.filter { $0.revocation != nil }
            var line = "\(members.count) known"
            if !revoked.isEmpty {
                line +=
                    ", \(revoked.count) revoked (\(revoked.map { $0.name ?? $0.nodeID.short }.joined(separator: ", ")))"
            }
            line += "; this machine admits others: \(replica.admitsOthers ? "yes" : "no") ('lansync members')"
            if let rule = try? replica.signedWritesStatement(), rule.required {
                line +=
                    "; signed writes required since \(WallClock.iso8601(milliseconds: rule.at)) (a write without its member's signature is refused)"
            }
            if let why = try? replica.readOnlyReason() {
                line += "; this machine may only read (\(why)): its edits are refused"
            }
            var text = Self.render(status, members: line)
            if !sessions.isEmpty {
                let since = sessions.map { String(WallClock.iso8601(milliseconds: $0.started).prefix(16)) }
                text +=
                    "\npage     \(sessions.count) logged-in session(s), since \(since.joined(separator: ", ")) (each ends with Log out, or after 30 days)"
            }
            print(text)
        }
    }

    static func render(_ status: NodeStatus, members: String? = nil) -> String {
        var lines: [String] = []
        lines.append("node     \(status.nodeID) (\(status.name))")
        lines.append("cluster  \(status.clusterID)")
        if let members { lines.append("members  \(members)") }
        if status.running, !status.answering {
            lines.append("state    running, not answering (busy or stuck): what follows is read from the replica file")
        } else if status.running {
            lines.append(
                "state    running, listening on \(status.listen ?? "-"); mDNS \(status.mdns?.description ?? "-")"
            )
            if let view = status.view, view.mode != "full mesh" { lines.append("view     \(view.summary)") }
            if let relays = status.relays { lines.append("relay    \(relays.summary)") }
            if let authority = status.authority { lines.append("settling \(authority.summary)") }
        } else {
            lines.append("state    no node running on this directory")
        }
        lines.append(
            "replica  \(status.items) items, \(status.deleted) deleted, \(status.conflicts) conflicts; digest \(status.digest)"
        )
        if let c = status.collection { lines.append(Self.past(c, status)) }
        if let changes = status.changes {
            let pending = changes.syncing.map { "\($0) syncing" } ?? "\(changes.dirty ?? 0) waiting (DIRTY)"
            let whereTo = changes.relay == nil ? "on every known peer" : "on the relay"
            lines.append("changes  \(changes.synced) of this node's changes are \(whereTo) (SYNCED), \(pending)")
        }
        lines += Self.problems(status)
        guard !status.peers.isEmpty else {
            lines.append("peers    none yet (run 'lansync node --peer HOST:PORT')")
            return Self.joined(lines)
        }
        let rows = status.peers.map { p -> [String] in
            let who = (p.name ?? "?") + (p.nodeID.map { " (\($0.prefix(7)))" } ?? "")
            let via = p.path == .direct ? p.source?.rawValue ?? "-" : p.path.rawValue
            return [
                who, p.address ?? "-", via, p.connected ? "connected" : "-", String((p.lastSync ?? "-").prefix(19)),
                p.lacks.map(String.init) ?? "-", p.receiving?.summary ?? "-", p.lastError ?? "-",
            ]
        }
        lines.append("")
        lines += Render.tableLines(
            ["PEER", "ADDRESS", "VIA", "STATE", "LAST SYNC", "LACKS", "RECEIVING", "LAST ERROR"],
            rows
        )
        return Self.joined(lines)
    }

    /// The `past` line: what collection has to do and has done, and why this replica holds
    /// back (away itself, or put back from a copy).
    static func past(_ c: NodeStatus.Collection, _ status: NodeStatus) -> String {
        let mb = { (bytes: Int) in Render.megabytes(UInt64(clamping: bytes)) }
        var line =
            "past     \(c.collectableItems) deleted item(s) to collect (\(c.collectableFields) field rows, beside \(c.liveFields) live), \(c.collectedItems) collected, \(c.purgedItems) purged; file \(mb(c.fileBytes)), \(mb(c.freeBytes)) free"
        line += "; frontier " + (c.frontierAt.map { "moved \($0)" } ?? "never moved")
        if let held = c.heldBackBy {
            let name = status.peers.first { $0.nodeID == held }?.name
            line += ", held back by \(name ?? String(held.prefix(8)))"
        }
        if !c.departed.isEmpty { line += "; \(c.departed.count) member(s) away or forgotten" }
        if let rejoined = c.rejoinedAt { line += "; rejoined from a snapshot \(rejoined)" }
        if let stale = c.staleSince {
            line +=
                "; this replica was put back from a copy and is stale since \(stale): it merges with no one and waits to rejoin from a current member (if every member is such a copy, 'lansync backup accept' on one, the relay if there is one)"
        } else if let away = c.awaySince {
            line +=
                "; this node is away itself since \(away) (it refuses only members away before then, collects nothing without the others)"
        }
        return line
    }

    /// What needs a person: refused changes and writes, clocks a day or more off, refused
    /// connections.
    static func problems(_ status: NodeStatus) -> [String] {
        var lines: [String] = []
        if !status.rejected.isEmpty {
            lines.append(
                "REJECTED \(status.rejected.count) of this node's changes were refused by the relay (permanent; the relay kept the earlier value):"
            )
            for r in status.rejected.prefix(5) { lines.append("         \(r.id).\(r.field): \(r.reason)") }
        }
        if !status.revokedWrites.isEmpty {
            lines.append(
                "REVOKED  \(status.revokedWrites.count) writes of revoked machines or readers made after their cut, or without their member's signature where it is required, were refused (the fields keep their earlier values; 'lansync history' shows both):"
            )
            for r in status.revokedWrites.prefix(5) { lines.append("         \(r.id).\(r.field): \(r.reason)") }
        }
        // A clock a day or more off orders edits wrongly and judges the windows wrong: said here
        // too, not only by `lansync doctor`.
        for p in status.peers {
            guard let offset = p.clockOffsetMs, offset.magnitude >= 86_400_000 else { continue }
            let tenths = (offset.magnitude + 4_320_000) / 8_640_000
            lines.append(
                "CLOCK    \(p.name ?? p.nodeID.map { String($0.prefix(7)) } ?? "a peer")'s clock is \(tenths / 10).\(tenths % 10) day(s) \(offset > 0 ? "ahead of" : "behind") this machine's: set both right ('lansync doctor' says more)"
            )
        }
        if !status.refused.isEmpty {
            lines.append("REFUSED  connections refused for their certificate:")
            for r in status.refused.prefix(5) {
                lines.append("         \(r.address): \(r.reason) (\(r.count)x, last \(r.last.prefix(19)))")
            }
        }
        return lines
    }

    /// Every line of the status is one line: names, reasons and errors peers chose are in them,
    /// so each is escaped whole (``Render/line(_:)``), line breaks included.
    static func joined(_ lines: [String]) -> String { lines.map(Render.line).joined(separator: "\n") }

    /// A relay whose replica is in PostgreSQL has no replica here to read: its status is what
    /// the running relay answers.
    private func runningRelayOnPostgres() throws {
        guard case .answered(let status) = data.directory.runningNodeStatus(waitingSeconds: wait) else {
            throw CLIError(
                "no relay answers on \(data.directory.path), and its replica is in PostgreSQL ('lansync relay --store'), not here: start the relay, or give '--wait' more seconds"
            )
        }
        print(
            json ? status.jsonText(members: []) : Self.render(status, members: "the relay's replica is in PostgreSQL")
        )
    }
}
