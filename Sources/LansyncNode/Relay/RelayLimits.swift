public import LansyncCore
public import LansyncReplica

/// The limits a node enforces on what peers send it, checked on every field state that arrives
/// before it is stored: ``Limits`` on every node, exactly as on writing, and on the relay the
/// lower ones it may be given for the whole cluster. A field state that breaks them is refused:
/// the node overrules it (see `ReplicaStorage.receive`), so it is never
/// stored, every replica converges on the refusal, and the node that wrote it shows it in
/// `status`, a permanent error that blocks nothing else.
public struct RelayLimits: Sendable, Equatable {
    /// The largest value of one field, in encoded bytes (at most ``Limits/maxValueBytes``).
    public var maxValueBytes = Limits.maxValueBytes
    /// The most user fields one item may have (at most ``Limits/maxFieldsPerItem``).
    public var maxFieldsPerItem = Limits.maxFieldsPerItem

    /// How a refusal names the limit: the relay's, or the one every node enforces.
    let whose: String

    /// What every node enforces: ``Limits``.
    public static let standard = RelayLimits(whose: "the limit")

    /// The check as the store takes it.
    public var refusal: FieldRefusal {
        { @Sendable key, state, held, userFields in try self.refusal(key, state, held, userFields: userFields) }
    }

    /// Limits above ``Limits`` are lowered to them: no node may store what another would refuse
    /// to write.
    public init(maxValueBytes: Int = Limits.maxValueBytes, maxFieldsPerItem: Int = Limits.maxFieldsPerItem) {
        self.init(maxValueBytes: maxValueBytes, maxFieldsPerItem: maxFieldsPerItem, whose: "the relay's limit")
    }

    private init(
        maxValueBytes: Int = Limits.maxValueBytes,
        maxFieldsPerItem: Int = Limits.maxFieldsPerItem,
        whose: String
    ) {
        self.maxValueBytes = min(maxValueBytes, Limits.maxValueBytes)
        self.maxFieldsPerItem = min(maxFieldsPerItem, Limits.maxFieldsPerItem)
        self.whose = whose
    }

    /// Why a change is refused, or nil, judging `incoming`: the field as merging the change would
    /// leave it (a field delta carries only part of the list). Only versions not in `held` (the
    /// field as this replica holds it) are judged, and the list as it would be; `userFields`
    /// counts the item's user fields, asked only when the field is new.
    public func refusal(
        _ key: FieldKey,
        _ incoming: FieldState,
        _ held: FieldState?,
        userFields: () throws -> Int
    ) rethrows -> String? {
        // A field holds a version or a few: no set to build for each field that arrives.
        for version in incoming.versions where held?.versions.contains(where: { $0.dot == version.dot }) != true {
            // The values judged where they are: no array gathered for each field that arrives.
            switch version.write {
            case .assign(let value):
                if let reason = refusal(of: value) { return reason }
            case .list(let change):
                for value in change.added { if let reason = refusal(of: value) { return reason } }
                for value in change.removed { if let reason = refusal(of: value) { return reason } }
            case .overrule, .unset: continue
            }
            if let reason = Self.reservedRefusal(key.field, version.write) { return reason }
        }
        // A field that holds no list entries has no list to judge (``FieldState/listValue`` is
        // made of them).
        if !incoming.entries.isEmpty {
            let size = Value.list(incoming.listValue).encodedSize
            if size > maxValueBytes { return "a list of \(size) bytes is over \(whose) of \(maxValueBytes)" }
        }
        if !key.field.isReserved, held == nil {
            let count = try userFields()
            if count >= maxFieldsPerItem {
                return "item \(key.item) would have more than \(maxFieldsPerItem) fields, \(whose)"
            }
        }
        return nil
    }

    /// Why one value a version writes is refused (too large, or nested too deep), or nil.
    private func refusal(of value: Value) -> String? {
        let size = value.encodedSize
        if size > maxValueBytes { return "a value of \(size) bytes is over \(whose) of \(maxValueBytes)" }
        let nesting = value.nesting
        if nesting > Limits.maxValueNesting {
            return "a value nests lists \(nesting) deep, over the limit of \(Limits.maxValueNesting)"
        }
        return nil
    }

    /// What lansync's own fields may hold: `_type` a valid type, `_deleted` a bool (a list edit
    /// of either is no write lansync makes).
    static func reservedRefusal(_ field: FieldName, _ write: FieldVersion.Write) -> String? {
        switch (field, write) {
        case (.type, .assign(.string(let type))):
            // The type itself is not repeated: it may hold anything.
            do { try ItemState.validate(type: type) } catch {
                return "an item type that is empty, over \(Limits.maxTypeBytes) bytes, or holds control characters"
            }
            return nil
        case (.type, _): return "an item type that is not text"
        case (.deleted, .assign(.bool)): return nil
        case (.deleted, _): return "a deletion that is not true or false"
        default: return nil
        }
    }
}
