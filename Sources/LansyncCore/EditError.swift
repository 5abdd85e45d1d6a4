/// Why an edit was refused. Every case leaves the replica unchanged; its ``description`` says what
/// was wrong, in one line, and its ``code`` what kind of failure it is (the CLI and the local API
/// add what to do, each in its own terms).
public enum EditError: CodedError, Equatable, Sendable {
    case invalidItemID(String)
    case invalidFieldName(String, reason: String)
    case invalidType(String)
    case itemExists(ItemID)
    case unknownItem(ItemID)
    case itemDeleted(ItemID)
    case itemNotDeleted(ItemID)
    case noAssignments
    case notAList(ItemID, FieldName, kind: String)
    case valueTooLarge(FieldName, bytes: Int)
    case valueTooDeep(FieldName, nesting: Int)
    case tooManyFields(ItemID, count: Int)
    case noConflict(ItemID, FieldName)
    /// An unset of a field the item does not show (never written, or removed already). A
    /// conflict with the item's state, not a missing item: the local API answers 409, so a
    /// program never reads "the item is gone" into it.
    case noField(ItemID, FieldName)
    /// A restore of an item deleted longer ago than the trash window (which may have been
    /// collected on other replicas already).
    case pastTrashWindow(ItemID, deletedAt: UInt64)

    public var description: String {
        switch self {
        case .invalidItemID(let id):
            "invalid item id '\(id.prefix(40))': use 1 to \(Limits.maxItemIDBytes) characters from A-Z a-z 0-9 . _ : -"
        case let .invalidFieldName(name, reason):
            "invalid field name '\(name.prefix(40))': \(reason)"
        case .invalidType(let type):
            "invalid type '\(type.prefix(40))': use 1 to \(Limits.maxTypeBytes) bytes with no control characters"
        case .itemExists(let id):
            "item \(id) already exists"
        case .unknownItem(let id):
            "no item with id \(id)"
        case .itemDeleted(let id):
            "item \(id) is deleted"
        case .itemNotDeleted(let id):
            "item \(id) is not deleted: nothing to restore"
        case .noAssignments:
            "nothing to change: give at least one FIELD=VALUE, FIELD+=ELEM or FIELD-=ELEM"
        case let .notAList(id, field, kind):
            "field '\(field)' of item \(id) holds \("aeiou".contains(kind.first ?? "x") ? "an" : "a") \(kind), not a list: '+=' and '-=' work on lists; use '\(field)=[...]' to make it one"
        case let .valueTooDeep(field, nesting):
            "value of field '\(field)' nests lists \(nesting) deep, over the limit of \(Limits.maxValueNesting): flatten it"
        case let .valueTooLarge(field, bytes):
            "value of field '\(field)' is \(bytes) bytes, over the limit of \(Limits.maxValueBytes): store less in one field"
        case let .tooManyFields(id, count):
            "item \(id) would have \(count) fields, over the limit of \(Limits.maxFieldsPerItem)"
        case let .noConflict(id, field):
            "field '\(field)' of item \(id) has no open conflict"
        case let .noField(id, field):
            "item \(id) has no field '\(field)'"
        case let .pastTrashWindow(id, deletedAt):
            "item \(id) was deleted at \(Self.iso8601(deletedAt)), before the cluster's trash window: it can no longer be restored (create it again instead)"
        }
    }

    public var code: ErrorCode {
        switch self {
        case .unknownItem: .notFound
        case .itemExists, .itemDeleted, .itemNotDeleted, .noConflict, .noField, .notAList, .pastTrashWindow: .conflict
        case _ where isOverALimit: .overLimit
        default: .badInput
        }
    }

    /// The edit is well formed but goes past one of ``Limits`` (a value's size or nesting, the
    /// number of fields, a name's or a type's length in bytes), rather than being misspelt. The
    /// local API answers these with 422, and the rest of its bad input with 400.
    public var isOverALimit: Bool {
        switch self {
        case .valueTooLarge, .valueTooDeep, .tooManyFields: true
        case .invalidFieldName(let name, _): name.utf8.count > Limits.maxFieldNameBytes
        case .invalidType(let type): type.utf8.count > Limits.maxTypeBytes
        default: false
        }
    }
}

extension EditError {
    /// `YYYY-MM-DDTHH:MM:SSZ` for Unix milliseconds (the core reads no clock and links no
    /// Foundation: civil-from-days, Howard Hinnant's algorithm).
    static func iso8601(_ milliseconds: UInt64) -> String {
        let seconds = Int64(milliseconds / 1000)
        let days = seconds / 86_400
        let rest = seconds % 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }
}
