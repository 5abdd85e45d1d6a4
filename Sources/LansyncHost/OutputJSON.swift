public import LansyncCore
import LansyncIdentity
public import LansyncJSON
public import LansyncNode
public import LansyncReplica
public import LansyncStore

/// The JSON forms of what read commands print with `--json` (Docs/CLI.md is their contract), kept
/// here so that every front end prints the same thing.
extension StoredItem {
    /// `{"id": ID, "type": TYPE, "fields": {...}, "deleted": BOOL, "conflicts": [...]}`, one line:
    /// what `export` writes a line of (``Item/jsonText`` adds the sync state).
    public var jsonText: String { Item(self, sync: nil).jsonText(withSync: false) }
}

extension HistoryEntry {
    /// One entry of `history --json`.
    public var json: JSON {
        .object([
            ("field", .string(field.rawValue)), ("write", write.json),
            ("node", .string(dot.node.text)), ("writer", writerName.map(JSON.string) ?? .null),
            ("counter", .integer(Int64(clamping: dot.counter))),
            ("time", .string(WallClock.iso8601(milliseconds: timestamp.milliseconds))),
            ("live", .bool(isLive)), ("signed", .bool(isSigned)),
        ])
    }
}

extension FieldConflict {
    /// One entry of `conflicts --json`: the distinct values, and each concurrent version with its
    /// writer (`node`, and its name when `names` knows it) and time. A version that removed the
    /// field has `"removed": true` and a null value; `removed` says whether one did, and `shown`
    /// is null when that one is shown.
    public func json(names: [NodeID: String] = [:]) -> JSON {
        .object([
            ("id", .string(item.rawValue)), ("field", .string(field.rawValue)),
            ("values", .array(values.map(\.json))), ("shown", shown?.json ?? .null), ("removed", .bool(removed)),
            (
                "versions",
                .array(
                    versions.map { version in
                        .object([
                            ("value", value(of: version)?.json ?? .null),
                            ("removed", .bool(version.write == .unset)),
                            ("node", .string(version.dot.node.text)),
                            ("writer", names[version.dot.node].map(JSON.string) ?? .null),
                            ("time", .string(WallClock.iso8601(milliseconds: version.timestamp.milliseconds))),
                        ])
                    }
                )
            ),
        ])
    }
}

extension DamageReport {
    /// What `check --json` prints.
    public var json: JSON {
        .object([
            ("sound", .bool(isSound)), ("fields_checked", .integer(Int64(fieldsChecked))),
            ("problems", .array(problems.map(JSON.string))),
        ])
    }
}

extension Sequence<HistoryEntry> {
    /// What `history --json` prints: an array of ``HistoryEntry/json``.
    public var jsonText: String { JSON.array(map(\.json)).text }
}

extension FieldConflict {
    /// The value a version stands for: what it set (or the relay kept), or for a list write the
    /// merged list (lists never conflict with lists); nil for a version that removed the field.
    public func value(of version: FieldVersion) -> Value? {
        switch version.write {
        case .assign(let value), .overrule(let value, _, _): value
        case .list: values.first { if case .list = $0 { true } else { false } } ?? .null
        case .unset: nil
        }
    }
}

extension Sequence<FieldConflict> {
    /// What `conflicts --json` prints: an array of ``FieldConflict/json(names:)``.
    public func jsonText(names: [NodeID: String] = [:]) -> String { JSON.array(map { $0.json(names: names) }).text }
}

extension ChangeEntry {
    /// One entry of the change feed, as `lansync watch --json` prints it and the API sends it:
    /// `{"seq", "time", "id", "type", "field", "kind", "value", "removed"}` (`removed`: the change
    /// removed the field; its value is null).
    public var jsonText: String {
        #"{"seq":\#(seq),"time":"# + JSON.string(WallClock.iso8601(milliseconds: at)).text + #","id":"#
            + JSON.string(item.rawValue).text + #","type":"# + JSON.string(type).text + #","field":"#
            + JSON.string(field.rawValue).text + #","kind":"# + JSON.string(kind.name).text + #","value":"#
            + (value?.jsonText ?? "null") + #","removed":"# + (removed ? "true" : "false") + "}"
    }
}

extension SyncResult {
    /// One peer of `sync --json`: `peer`, `ok`, and `node_id`, `name`, `sent`, `received` when it
    /// succeeded, else `error`.
    public var json: JSON {
        var members: [(key: String, value: JSON)] = [("peer", .string(peer.description))]
        if succeeded, let nodeID {
            members += [
                ("ok", .bool(true)), ("node_id", .string(nodeID.text)), ("name", .string(name ?? "")),
                ("sent", .integer(Int64(counters.sentUpdates))),
                ("received", .integer(Int64(counters.receivedUpdates))),
            ]
        } else {
            members += [("ok", .bool(false)), ("error", .string(error ?? "failed"))]
        }
        return .object(members)
    }
}

extension Sequence<SyncResult> {
    /// What `sync --json` prints: one object per peer, in the order given.
    public var jsonText: String { JSON.array(map(\.json)).text }
}

extension DataDirectory.Member {
    /// One member of `members --json` (and of `status --json`'s `members`).
    public var json: JSON {
        func time(_ ms: UInt64?) -> JSON { ms.map { .string(WallClock.iso8601(milliseconds: $0)) } ?? .null }
        return .object([
            ("node_id", .string(nodeID.text)),
            ("name", name.map(JSON.string) ?? .null),
            ("this_node", .bool(isThisNode)),
            ("state", .string(state)),
            ("revoked_at", time(revocation?.at)),
            ("revoked_by", revocation.map { .string($0.by.text) } ?? .null),
            ("reason", revocation.map { .string($0.reason) } ?? .null),
            ("admitted_here_at", time(admittedHere)),
            ("admitted_at", time(admission?.at)),
            ("admitted_by", admission.map { .string($0.by.text) } ?? .null),
            ("admits", admits.map(JSON.bool) ?? .null),
            ("last_sync", time(lastSync)),
            ("last_seen", time(seenAt)),
            ("forgotten_at", time(forgottenAt)),
            ("role", revocation == nil ? .string(role.description) : .null),
            ("role_since", time(roleStatement?.at)),
            ("role_by", roleStatement.map { .string($0.by.text) } ?? .null),
        ])
    }
}

extension Sequence<DataDirectory.Member> {
    /// What `members --json` prints.
    public var jsonText: String { JSON.array(map(\.json)).text }
}

extension NodeStatus {
    /// What `status --json` prints: the node's status, and the members as `members --json` lists
    /// them.
    public func jsonText(members: [DataDirectory.Member], sessions: [UISession] = []) -> String {
        guard case .object(let pairs) = jsonValue else { return json }
        return JSON.object(
            pairs + [("members", .array(members.map(\.json))), ("ui_sessions", .array(sessions.map(\.json)))]
        ).text
    }

    /// `GET /v1/status`: the status, with the web page's sessions (`ui_sessions`).
    public func jsonText(sessions: [UISession]) -> String {
        guard case .object(let pairs) = jsonValue else { return json }
        return JSON.object(pairs + [("ui_sessions", .array(sessions.map(\.json)))]).text
    }
}

extension DataDirectory.Invitation {
    /// What `invite --json` prints: `code`, `expires_at`, `address`, `node_running`.
    public var jsonText: String {
        JSON.object([
            ("code", .string(code.text)),
            ("expires_at", .string(WallClock.iso8601(milliseconds: expiresAt))),
            ("address", reach.map(JSON.string) ?? .null),
            ("node_running", .bool(nodeRunning)),
        ]).text
    }

    /// Where the code says the inviting machine listens (`HOST:PORT`), if it says.
    public var reach: String? { code.host.flatMap { host in code.port.map { "\(host):\($0)" } } }
}

extension ItemImport.Progress {
    /// What `import --json` prints: `lines`, `edits`, `seconds`.
    public func jsonText(seconds: Double) -> String {
        JSON.object([
            ("lines", .integer(Int64(lines))), ("edits", .integer(Int64(edits))),
            ("seconds", .double((seconds * 1000).rounded() / 1000)),
        ]).text
    }
}

extension DamageReport {
    /// What `check --json` prints: ``json`` as text.
    public var jsonText: String { json.text }
}

extension Value {
    /// The value for people: a string as it is (unless it holds anything ``TerminalText``
    /// escapes: control characters, line separators, direction overrides; then quoted, as JSON
    /// escapes them), a link as `@ID` (as it is typed), anything else in its JSON form.
    public var displayText: String {
        if case .string(let s) = self, TerminalText.isPlain(s) { return s }
        if case .ref(let id) = self { return "@" + id.rawValue }
        return jsonText
    }
}

extension BackupSummary {
    /// `lansync backup --json`: `{"file", "bytes", "node", "cluster", "items", "deleted", "taken"}`
    /// (`taken` is null for a copy `lansync backup` did not make).
    public var json: JSON {
        .object([
            ("file", .string(path)), ("bytes", .integer(Int64(clamping: bytes))),
            ("node", .string(nodeID.text)), ("cluster", .string(clusterID.text)),
            ("items", .integer(Int64(items))), ("deleted", .integer(Int64(deleted))),
            ("taken", takenAt == 0 ? .null : .string(WallClock.iso8601(milliseconds: takenAt))),
        ])
    }

    public var jsonText: String { json.text }
}

extension RestoreReport {
    /// `lansync backup restore --json`: the backup's summary, where the replaced replica was kept,
    /// and whether the backup is older than the cluster's away window (then stale: the node takes
    /// a snapshot from a current peer, keeping its own edits, before it syncs).
    public func json(now: UInt64) -> JSON {
        .object([
            ("backup", backup.json), ("replaced", replacedCopy.map(JSON.string) ?? .null),
            ("stale", .bool(isStale(now: now))),
        ])
    }

    public func jsonText(now: UInt64) -> String { json(now: now).text }

    /// True if the backup was taken longer ago than the cluster's away window.
    public func isStale(now: UInt64) -> Bool {
        backup.takenAt > 0 && backup.takenAt &+ awayAfter < now
    }
}

extension UISession {
    /// One of `status --json`'s `ui_sessions`: `{"id", "started"}`.
    public var json: JSON {
        .object([("id", .string(id)), ("started", .string(WallClock.iso8601(milliseconds: started)))])
    }
}

extension Array where Element == Item {
    /// A page of `GET /v1/items` (Docs/API.md): `{"items": [...], "next": CURSOR}`, each item as
    /// ``Item/jsonText``; `next` null on the last page.
    public func pageJSONText(next: String?) -> String {
        #"{"items":["# + map(\.jsonText).joined(separator: ",") + #"],"next":"#
            + (next.map { JSON.string($0).text } ?? "null") + "}"
    }
}

extension Array where Element == ChangeEntry {
    /// A page of `GET /v1/changes` (Docs/API.md): `{"changes": [...], "last": N}`, where `last`
    /// is where the next page starts.
    public func pageJSONText(last: UInt64) -> String {
        #"{"changes":["# + map(\.jsonText).joined(separator: ",") + #"],"last":\#(last)}"#
    }
}
