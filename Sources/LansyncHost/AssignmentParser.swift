public import LansyncCore
import LansyncJSON
import LansyncReplica
public import LansyncStore

/// Parses assignments, as the CLI and the API take them: `FIELD=VALUE`, `FIELD+=ELEM`, `FIELD-=ELEM`.
///
/// VALUE and ELEM are JSON when they are valid JSON (a number, true, false, null, a "quoted
/// string", an [array], or a link `{"ref": ID}`) and plain text otherwise, so `title=Climb` stores
/// the string "Climb", `n=3` the integer 3, `n=3.0` the double 3, and `tags=["a","b"]` a list.
/// `@ID` is a link to the item ID (a unique start of it will do: ``LocalReplica`` resolves it
/// when the edit is made); text that starts with `@` is written quoted, `'handle="@ana"'`.
public enum AssignmentParser {
    public static func parse(_ argument: String) throws -> Assignment {
        // Scalars, not characters: a value that starts with a combining mark or an emoji
        // modifier (`x=\u{301}`) makes one character of "=" and itself.
        guard let equals = argument.unicodeScalars.firstIndex(of: "=") else {
            throw HostError(
                "'\(argument.prefix(40))' is not an assignment: write FIELD=VALUE, FIELD+=ELEM or FIELD-=ELEM"
            )
        }
        var name = String(argument.unicodeScalars[..<equals])
        let text = String(argument.unicodeScalars[argument.unicodeScalars.index(after: equals)...])
        let value = try parseValue(text, field: String(name.prefix(40)))
        let kind: (FieldName, Value) -> Assignment
        if name.hasSuffix("+") {
            name.removeLast()
            kind = Assignment.add
        } else if name.hasSuffix("-") {
            name.removeLast()
            kind = Assignment.remove
        } else {
            kind = Assignment.set
        }
        return kind(try FieldName(name), value)
    }

    /// JSON when valid, plain text otherwise; but a number out of range is an error, not text,
    /// and so is a JSON object (anywhere in the value), which `import` refuses too: one rule.
    public static func parseValue(_ text: String, field: String) throws -> Value {
        if text.hasPrefix("@"), let id = try? ItemID(String(text.dropFirst())) { return .ref(id) }
        let json: JSON
        do {
            json = try JSON(parsing: text)
        } catch  where error.isNumberOutOfRange {
            var outOfRange = HostError("\(field)=\(text.prefix(40)): \(error.message)")
            outOfRange.code = .overLimit
            throw outOfRange
        } catch {
            return .string(text)
        }
        guard let value = json.value else {
            // A well-formed assignment whose value lansync cannot keep: the API's 422.
            var object = HostError(
                "\(field)=\(text.prefix(40)): a JSON object is not a field value (values are null, bool, number, string, list, or a link {\"ref\": ID}): to keep it as text, quote it as a JSON string"
            )
            object.code = .overLimit
            throw object
        }
        return value
    }

    public static func parseItemID(_ text: String) throws -> ItemID {
        try ItemID(text)
    }

    /// The item an id typed by a user names: the id itself, or the one item whose id starts
    /// with it. Throws, saying what matched, for a prefix of several; an id nothing matches is
    /// returned as typed, so the command reports it as unknown in its own words.
    public static func resolveItemID(_ text: String, in store: ReplicaStore) throws -> ItemID {
        let typed = try ItemID(text)
        let matches = try store.itemIDs(matching: typed.rawValue)
        switch matches.count {
        case 0: return typed
        case 1: return matches[0]
        default:
            let shown = matches.prefix(4).map(\.rawValue).joined(separator: ", ")
            throw HostError(
                "'\(text)' is the start of several item ids (\(shown)\(matches.count > 4 ? ", …" : "")): give more of it"
            )
        }
    }
}
