public import LansyncJSON
import LansyncReplica

// The JSON form of the status, with LansyncJSON like every other JSON lansync writes: the
// contract of `status --json` and of the control socket's answer (Docs/CLI.md). Keys are
// snake_case and sorted; every key is present, `null` when it has no value.

extension NodeStatus {
    /// The status as a JSON value.
    public var jsonValue: JSON {
        .object([
            ("answering", .bool(answering)), ("api", .optional(api)),
            ("authority", authority?.jsonValue ?? .null), ("changes", changes?.jsonValue ?? .null),
            ("cluster_id", .string(clusterID)),
            ("collection", collection?.jsonValue ?? .null),
            ("conflicts", .int(conflicts)),
            ("damaged", .optional(damaged)), ("deleted", .int(deleted)), ("digest", .string(digest)),
            ("items", .int(items)), ("listen", .optional(listen)), ("mdns", .optional(mdns?.description)),
            ("name", .string(name)),
            ("node_id", .string(nodeID)), ("peers", .array(peers.map(\.jsonValue))),
            ("refused", .array(refused.map(\.jsonValue))), ("rejected", .array(rejected.map(\.jsonValue))),
            ("relays", relays?.jsonValue ?? .null),
            ("revoked_writes", .array(revokedWrites.map(\.jsonValue))), ("running", .bool(running)),
            (
                "version_vector",
                .object(versionVector.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64(clamping: $0.value))) })
            ),
            ("view", view?.jsonValue ?? .null),
        ])
    }

    /// The JSON text of `status --json` (and of the control socket's answer).
    public var json: String { jsonValue.text }

    /// Reads what ``json`` writes.
    public init(json bytes: [UInt8]) throws {
        let j = JSONFields(try JSON(parsing: String(decoding: bytes, as: UTF8.self)), "the status")
        self.init(
            nodeID: try j.string("node_id"),
            name: try j.string("name"),
            clusterID: try j.string("cluster_id"),
            running: try j.bool("running"),
            listen: try j.optionalString("listen"),
            mdns: try j.optionalString("mdns").map(DiscoveryState.init(text:)),
            items: try j.int("items"),
            deleted: try j.int("deleted"),
            conflicts: try j.int("conflicts"),
            digest: try j.string("digest"),
            damaged: try j.optionalString("damaged"),
            versionVector: try j.counters("version_vector"),
            peers: try j.array("peers").map(Peer.init(json:)),
            changes: try j.optional("changes").map(Changes.init(json:)),
            rejected: try j.array("rejected").map(Rejection.init(json:)),
            revokedWrites: try j.array("revoked_writes").map(Rejection.init(json:)),
            refused: try j.array("refused").map(Refusal.init(json:))
        )
        api = try j.optionalString("api")
        // Absent from the answers of nodes built before it: such a node answered.
        answering = try j.optional("answering").map { _ in try j.bool("answering") } ?? true
        collection = try j.optional("collection").map(Collection.init(json:))
        view = try j.optional("view").map(View.init(json:))
        relays = try j.optional("relays").map(Relays.init(json:))
        authority = try j.optional("authority").map(SettlingStanding.init(json:))
    }
}

extension SettlingStanding {
    /// `{"standing": "holding", "epoch": 2, "holder": null, "reason": null}`: every key present.
    var jsonValue: JSON {
        let (name, epoch, holder, reason): (String, Int64?, String?, String?) =
            switch self {
            case .starting: ("starting", nil, nil, nil)
            case .holding(let epoch): ("holding", epoch, nil, nil)
            case .lapsed(let epoch): ("lapsed", epoch, nil, nil)
            case .following(let holder, let epoch): ("following", epoch, holder, nil)
            case .unreachable(let why): ("unreachable", nil, nil, why)
            }
        return .object([
            ("epoch", epoch.map { .integer($0) } ?? .null), ("holder", .optional(holder)),
            ("reason", .optional(reason)), ("standing", .string(name)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "the status's authority")
        let epoch = { () throws -> Int64 in Int64(try j.int("epoch")) }
        switch try j.string("standing") {
        case "starting": self = .starting
        case "holding": self = .holding(epoch: try epoch())
        case "lapsed": self = .lapsed(epoch: try epoch())
        case "following": self = .following(holder: try j.string("holder"), epoch: try epoch())
        case "unreachable": self = .unreachable(try j.string("reason"))
        default: throw j.wrong("standing")
        }
    }

    /// What `status` shows: "holds the lease (epoch 2): settles conflicts", ...
    public var summary: String {
        switch self {
        case .starting: "starting: has not asked the database yet"
        case .holding(let epoch): "holds the lease (epoch \(epoch)): this relay settles conflicts"
        case .lapsed(let epoch):
            "held the lease (epoch \(epoch)) but has not renewed it in time: settles nothing until it does"
        case .following(let holder, let epoch): "follows \(holder), which holds the lease (epoch \(epoch)) and settles"
        case .unreachable(let why): "cannot reach the database, settles nothing: \(why)"
        }
    }
}

extension NodeStatus.Relays {
    var jsonValue: JSON {
        .object([
            ("addresses", .array(addresses.map(JSON.string))), ("connected", connected.map(JSON.bool) ?? .null),
            ("current", .string(current)), ("failovers", .int(failovers)),
            (
                "last_failover",
                lastFailover.map {
                    .object([
                        ("at", .string($0.at)), ("from", .string($0.from)), ("reason", .string($0.reason)),
                        ("to", .string($0.to)),
                    ])
                } ?? .null
            ),
            (
                "problem",
                problem.map { .object([("reason", .string($0.reason)), ("since", .optional($0.since))]) } ?? .null
            ),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "the status's relays")
        self.init(
            current: try j.string("current"),
            addresses: try j.array("addresses").map { address in
                guard case .string(let text) = address else { throw j.wrong("addresses") }
                return text
            },
            failovers: try j.int("failovers"),
            lastFailover: try j.optional("last_failover").map { last in
                let f = JSONFields(last, "the status's last failover")
                return Failover(
                    from: try f.string("from"),
                    to: try f.string("to"),
                    reason: try f.string("reason"),
                    at: try f.string("at")
                )
            },
            // A node from before issue 63 does not say.
            connected: try j.optional("connected").map { _ in try j.bool("connected") },
            problem: try j.optional("problem").map { problem in
                let p = JSONFields(problem, "the status's relay problem")
                return Problem(reason: try p.string("reason"), since: try p.optionalString("since"))
            }
        )
    }
}

extension NodeStatus.View {
    var jsonValue: JSON {
        .object([
            (
                "active",
                .array(active.map { .object([("node_id", .string($0.nodeID)), ("reason", .string($0.reason))]) })
            ),
            ("flood", .int(flood)), ("mode", .string(mode)), ("passive", .int(passive)), ("target", .int(target)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "the status's view")
        self.init(
            mode: try j.string("mode"),
            target: try j.int("target"),
            active: try j.array("active").map { member in
                let m = JSONFields(member, "a member of the view")
                return Member(nodeID: try m.string("node_id"), reason: try m.string("reason"))
            },
            passive: try j.int("passive"),
            flood: try j.optionalInt("flood") ?? 0
        )
    }
}

extension NodeStatus.Collection {
    var jsonValue: JSON {
        .object([
            ("collectable_fields", .int(collectableFields)), ("collectable_items", .int(collectableItems)),
            ("collected_items", .int(collectedItems)), ("purged_items", .int(purgedItems)),
            ("departed", .array(departed.map(JSON.string))),
            ("file_bytes", .int(fileBytes)), ("free_bytes", .int(freeBytes)), ("frontier_at", .optional(frontierAt)),
            ("held_back_by", .optional(heldBackBy)), ("live_fields", .int(liveFields)),
            ("rejoined_at", .optional(rejoinedAt)), ("away_since", .optional(awaySince)),
            ("stale_since", .optional(staleSince)), ("rounds", rounds.map { .int($0) } ?? .null),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "the status's collection")
        self.init(
            liveFields: try j.int("live_fields"),
            collectableItems: try j.int("collectable_items"),
            collectableFields: try j.int("collectable_fields"),
            collectedItems: try j.int("collected_items"),
            purgedItems: try j.int("purged_items"),
            fileBytes: try j.int("file_bytes"),
            freeBytes: try j.int("free_bytes"),
            frontierAt: try j.optionalString("frontier_at"),
            heldBackBy: try j.optionalString("held_back_by"),
            departed: try j.array("departed").map { value in
                guard case .string(let text) = value else { throw j.wrong("departed") }
                return text
            },
            rejoinedAt: try j.optionalString("rejoined_at"),
            awaySince: try j.optionalString("away_since"),
            staleSince: try j.optionalString("stale_since")
        )
        rounds = try j.optionalInt("rounds")
    }
}

extension NodeStatus.Peer {
    var jsonValue: JSON {
        var members: [(key: String, value: JSON)] = [
            ("connected", .bool(connected)), ("name", .optional(name)), ("node_id", .optional(nodeID)),
            ("path", .string(path.rawValue)),
        ]
        // A node met only through others has no address, source or session of its own.
        if path == .direct || path == .relay {
            members += [
                ("address", .optional(address)), ("advertised", .array(advertised.map(JSON.string))),
                ("clock_offset_ms", clockOffsetMs.map(JSON.int) ?? .null),
                ("lacks", lacks.map(JSON.int) ?? .null),
                ("last_error", .optional(lastError)), ("last_sync", .optional(lastSync)),
                ("received_bytes", counters.map { .int($0.receivedBytes) } ?? .null),
                ("received_updates", counters.map { .int($0.receivedUpdates) } ?? .null),
                ("receiving", receiving?.jsonValue ?? .null),
                ("round_trips_waited", roundTripsWaited.map(JSON.int) ?? .null),
                ("sent_bytes", counters.map { .int($0.sentBytes) } ?? .null),
                ("sent_updates", counters.map { .int($0.sentUpdates) } ?? .null),
                ("source", .optional(source?.rawValue)),
            ]
        }
        return .object(members.sorted { $0.key < $1.key })
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "a peer")
        guard let path = Path(rawValue: try j.string("path")) else { throw j.wrong("path") }
        self.init(
            nodeID: try j.optionalString("node_id"),
            name: try j.optionalString("name"),
            path: path,
            connected: try j.bool("connected")
        )
        address = try j.optionalString("address")
        if case .array(let list)? = try j.optional("advertised") {
            advertised = list.compactMap { if case .string(let text) = $0 { text } else { nil } }
        }
        source = try j.optionalString("source").flatMap(PeerSource.init(rawValue:))
        lastSync = try j.optionalString("last_sync")
        lacks = try j.optionalInt("lacks")
        lastError = try j.optionalString("last_error")
        let counts = try ["sent_updates", "received_updates", "sent_bytes", "received_bytes"].map(j.optionalInt)
        if counts.contains(where: { $0 != nil }) {
            counters = SessionCounters(
                sentUpdates: counts[0] ?? 0,
                receivedUpdates: counts[1] ?? 0,
                sentBytes: counts[2] ?? 0,
                receivedBytes: counts[3] ?? 0
            )
        }
        roundTripsWaited = try j.optionalInt("round_trips_waited")
        clockOffsetMs = try j.optionalInt("clock_offset_ms")
        receiving = try j.optional("receiving").map(Receiving.init(json:))
    }
}

extension NodeStatus.Peer.Receiving {
    var jsonValue: JSON {
        .object([
            ("eta_seconds", etaSeconds.map(JSON.int) ?? .null), ("expected", .int(expected)),
            ("received", .int(received)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "a peer's receiving")
        self.init(
            received: try j.int("received"),
            expected: try j.int("expected"),
            etaSeconds: try j.optionalInt("eta_seconds")
        )
    }
}

extension NodeStatus.Changes {
    var jsonValue: JSON {
        .object([
            ("dirty", dirty.map(JSON.int) ?? .null), ("recent", .array(recent.map(\.jsonValue))),
            ("relay", .optional(relay)), ("synced", .int(synced)), ("syncing", syncing.map(JSON.int) ?? .null),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "the changes")
        self.init(
            relay: try j.optionalString("relay"),
            synced: try j.int("synced"),
            syncing: try j.optionalInt("syncing"),
            dirty: try j.optionalInt("dirty"),
            recent: try j.array("recent").map(NodeStatus.Change.init(json:))
        )
    }
}

extension NodeStatus.Change {
    var jsonValue: JSON {
        .object([
            ("counter", .integer(Int64(clamping: counter))), ("field", .string(field)), ("id", .string(id)),
            ("state", .string(state.rawValue)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "a change")
        guard let state = State(rawValue: try j.string("state")) else { throw j.wrong("state") }
        self.init(id: try j.string("id"), field: try j.string("field"), counter: try j.uint64("counter"), state: state)
    }
}

extension NodeStatus.Refusal {
    var jsonValue: JSON {
        .object([
            ("address", .string(address)), ("count", .int(count)), ("last", .string(last)), ("reason", .string(reason)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "a refusal")
        self.init(
            address: try j.string("address"),
            reason: try j.string("reason"),
            count: try j.int("count"),
            last: try j.string("last")
        )
    }
}

extension NodeStatus.Rejection {
    var jsonValue: JSON {
        .object([
            ("counter", .integer(Int64(clamping: counter))), ("field", .string(field)), ("id", .string(id)),
            ("reason", .string(reason)),
        ])
    }

    init(json: JSON) throws {
        let j = JSONFields(json, "a rejection")
        self.init(
            id: try j.string("id"),
            field: try j.string("field"),
            counter: try j.uint64("counter"),
            reason: try j.string("reason")
        )
    }
}

extension JSON {
    fileprivate static func int(_ n: Int) -> JSON { .integer(Int64(n)) }
    fileprivate static func optional(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }
}

/// The members of a JSON object read by key, each failure saying which key of what was wrong.
struct JSONFields {
    let json: JSON
    let what: String

    init(_ json: JSON, _ what: String) {
        self.json = json
        self.what = what
    }

    /// The status's JSON is not as ``NodeStatus/json`` writes it.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    func wrong(_ key: String) -> Malformed { Malformed(description: "\(what) has no valid '\(key)'") }

    func optional(_ key: String) throws -> JSON? {
        guard case .object = json else { throw Malformed(description: "\(what) is not a JSON object") }
        guard let value = json[key], value != .null else { return nil }
        return value
    }

    func string(_ key: String) throws -> String {
        guard case .string(let s)? = try optional(key) else { throw wrong(key) }
        return s
    }

    func optionalString(_ key: String) throws -> String? {
        guard let value = try optional(key) else { return nil }
        guard case .string(let s) = value else { throw wrong(key) }
        return s
    }

    func int(_ key: String) throws -> Int {
        guard let n = try optionalInt(key) else { throw wrong(key) }
        return n
    }

    func optionalInt(_ key: String) throws -> Int? {
        guard let value = try optional(key) else { return nil }
        guard case .integer(let n) = value else { throw wrong(key) }
        return Int(n)
    }

    func uint64(_ key: String) throws -> UInt64 {
        guard case .integer(let n)? = try optional(key), n >= 0 else { throw wrong(key) }
        return UInt64(n)
    }

    func bool(_ key: String) throws -> Bool {
        guard case .bool(let b)? = try optional(key) else { throw wrong(key) }
        return b
    }

    func array(_ key: String) throws -> [JSON] {
        guard let value = try optional(key) else { return [] }
        guard case .array(let elements) = value else { throw wrong(key) }
        return elements
    }

    func counters(_ key: String) throws -> [String: UInt64] {
        guard let value = try optional(key) else { return [:] }
        guard case .object(let members) = value else { throw wrong(key) }
        var counters: [String: UInt64] = [:]
        for (node, counter) in members {
            guard case .integer(let n) = counter, n >= 0 else { throw wrong(key) }
            counters[node] = UInt64(n)
        }
        return counters
    }
}
