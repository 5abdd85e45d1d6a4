import LansyncJSON
import LansyncReplica
import LansyncStore

/// An item as every front end shows it: its id, type, fields with their shown values, open
/// conflicts, and whether this machine's latest edit of it has left (``ItemSync``). Typed through
/// and through: JSON is made from it in one place (``jsonText``), never parsed back.
public struct Item: Sendable, Equatable {
    /// A field and the value it shows.
    public struct Field: Sendable, Equatable {
        public let name: FieldName
        public let value: Value
    }

    public let id: ItemID
    public let type: String
    public let deleted: Bool
    /// User fields by name, in byte order.
    public let fields: [Field]
    /// The fields with an open conflict (`_type` among them when the item's type is in conflict).
    public let conflicts: [FieldName]
    /// The sync state of this machine's latest live edit of the item; nil when it has none.
    public let sync: ItemSync?

    init(_ stored: StoredItem, sync: ItemSync?) {
        id = stored.id
        type = stored.type
        deleted = stored.deleted
        fields = stored.fields.map { Field(name: $0.name, value: $0.value) }
        conflicts = stored.conflicts
        self.sync = sync
    }

    /// The shown value of the field `name`, nil if the item has no such field.
    public func value(of name: FieldName) -> Value? { fields.first { $0.name == name }?.value }

    /// True if the field `name` has an open conflict.
    public func isConflicted(_ name: FieldName) -> Bool { conflicts.contains(name) }

    /// `{"id", "type", "fields", "deleted", "conflicts", "sync"}`, one line: what `get --json`
    /// prints, `list --json` lists and the API serves (Docs/CLI.md).
    public var jsonText: String { jsonText(withSync: true) }

    /// The JSON form, written as text directly (an export of many items builds no JSON tree per
    /// item); an export line has no `sync` (it is not this machine's to carry elsewhere).
    func jsonText(withSync: Bool) -> String {
        var out = #"{"id":"# + JSON.string(id.rawValue).text + #","type":"# + JSON.string(type).text + #","fields":{"#
        for (i, field) in fields.enumerated() {
            if i > 0 { out += "," }
            out += JSON.string(field.name.rawValue).text + ":" + field.value.jsonText
        }
        out += #"},"deleted":"# + (deleted ? "true" : "false") + #","conflicts":"#
        out += JSON.array(conflicts.map { .string($0.rawValue) }).text
        if withSync { out += #","sync":"# + (sync?.json.text ?? "null") }
        return out + "}"
    }
}
