public import LansyncCore

/// The limits the relay enforces for the whole cluster. A field state that breaks them is refused:
/// the relay overrules it (see `ReplicaStore.apply(_:wallMilliseconds:refuse:)`), and the node that
/// wrote it shows the refusal in `status`, a permanent error that blocks nothing else.
public struct RelayLimits: Sendable, Equatable {
    /// The largest value of one field, in encoded bytes.
    public var maxValueBytes = Limits.maxValueBytes
    /// The most user fields one item may have.
    public var maxFieldsPerItem = Limits.maxFieldsPerItem

    public init(maxValueBytes: Int = Limits.maxValueBytes, maxFieldsPerItem: Int = Limits.maxFieldsPerItem) {
        self.maxValueBytes = maxValueBytes
        self.maxFieldsPerItem = maxFieldsPerItem
    }

    /// Why a change is refused, or nil, judging `incoming`: the field as merging the change would
    /// leave it (a field delta carries only part of the list). Only versions the relay does not
    /// hold yet are judged, and the list as it would be.
    public func refusal(_ key: FieldKey, _ incoming: FieldState, _ item: ItemState?) -> String? {
        let held = Set(item?.fields[key.field]?.versions.map(\.dot) ?? [])
        for version in incoming.versions where !held.contains(version.dot) {
            var values: [Value] = []
            switch version.write {
            case .assign(let value): values = [value]
            case .list(let change): values = change.added
            case .overrule: continue
            }
            if let big = values.first(where: { $0.encodedSize > maxValueBytes }) {
                return "a value of \(big.encodedSize) bytes is over the relay's limit of \(maxValueBytes)"
            }
        }
        if let list = incoming.listValue.isEmpty ? nil : Value.list(incoming.listValue),
            list.encodedSize > maxValueBytes
        {
            return "a list of \(list.encodedSize) bytes is over the relay's limit of \(maxValueBytes)"
        }
        if !key.field.isReserved, item?.fields[key.field] == nil,
            let count = item?.fields.keys.filter({ !$0.isReserved }).count, count >= maxFieldsPerItem
        {
            return "item \(key.item) would have more than \(maxFieldsPerItem) fields, the relay's limit"
        }
        return nil
    }
}
