public import LansyncCore

extension FieldVersion.Write {
    /// The write's JSON form: what `history --json` prints and the `history` table's `write`
    /// column holds (readable with the sqlite3 shell):
    /// `{"set": V}`, `{"unset": true}`, `{"list": {"replaced": B, "added": [...], "removed": [...]}}`
    /// or `{"overrule": {"kept": V, "rejected": ["NODE:COUNTER", ...], "reason": "..."}}`.
    public var json: JSON {
        switch self {
        case .assign(let value):
            return .object([("set", value.json)])
        case .unset:
            return .object([("unset", .bool(true))])
        case .list(let change):
            let list: JSON = .object([
                ("replaced", .bool(change.replaced)),
                ("added", .array(change.added.map(\.json))),
                ("removed", .array(change.removed.map(\.json))),
            ])
            return .object([("list", list)])
        case let .overrule(kept, rejected, reason):
            let overrule: JSON = .object([
                ("kept", kept.json),
                ("rejected", .array(rejected.map { .string("\($0.node.text):\($0.counter)") })),
                ("reason", .string(reason)),
            ])
            return .object([("overrule", overrule)])
        }
    }

    /// Reads what ``json`` writes; nil for anything else.
    public init?(json: JSON) {
        if let set = json["set"]?.value {
            self = .assign(set)
        } else if json["unset"] == .bool(true) {
            self = .unset
        } else if let o = json["overrule"], let kept = o["kept"]?.value, case .string(let reason)? = o["reason"],
            case .array(let list)? = o["rejected"]
        {
            let dots = list.compactMap { entry -> Dot? in
                guard case .string(let text) = entry else { return nil }
                let parts = text.split(separator: ":")
                guard parts.count == 2, let node = NodeID(text: String(parts[0])), let counter = UInt64(parts[1]) else {
                    return nil
                }
                return Dot(node: node, counter: counter)
            }
            self = .overrule(kept: kept, rejected: dots, reason: reason)
        } else if let list = json["list"], case .bool(let replaced)? = list["replaced"],
            case .list(let added)? = list["added"]?.value, case .list(let removed)? = list["removed"]?.value
        {
            self = .list(ListChange(replaced: replaced, added: added, removed: removed))
        } else {
            return nil
        }
    }
}
