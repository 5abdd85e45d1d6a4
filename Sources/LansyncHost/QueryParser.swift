import Foundation
public import LansyncCore

/// The query language of `lansync list --where` and the API's `where` (Docs/API.md, "Queries"):
/// `FIELD OP VALUE` with OP one of `=`, `!=`, `<`, `<=`, `>`, `>=`, `FIELD contains ELEMENT`,
/// `FIELD prefix TEXT`, `FIELD exists`, `FIELD missing`. A VALUE is read as an assignment's is:
/// JSON when valid JSON, plain text otherwise (`owner=ana`, `priority>=2`, `title="2"`).
public enum QueryParser {
    public static func filter(_ text: String) throws -> ItemQuery.Filter {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let words = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        if words.count == 2, let op = ItemQuery.Filter.Operator(rawValue: words[1]), op == .exists || op == .missing {
            return ItemQuery.Filter(field: try field(words[0], in: text), op: op, value: nil)
        }
        if words.count == 3, let op = ItemQuery.Filter.Operator(rawValue: words[1]), op == .contains || op == .prefix {
            let value = try AssignmentParser.parseValue(words[2], field: words[0])
            if op == .prefix, case .string = value {
            } else if op == .prefix {
                throw HostError("'\(text.prefix(60))': prefix takes text, like 'title prefix Fix'")
            }
            return ItemQuery.Filter(field: try field(words[0], in: text), op: op, value: value)
        }
        // FIELD OP VALUE, the operator being the first of = ! < > in the text.
        guard let start = trimmed.unicodeScalars.firstIndex(where: { "=!<>".unicodeScalars.contains($0) }) else {
            throw HostError(
                "'\(text.prefix(60))' is not a condition: write FIELD=VALUE (or !=, <, <=, >, >=), FIELD contains VALUE, FIELD prefix TEXT, FIELD exists or FIELD missing"
            )
        }
        let name = String(trimmed.unicodeScalars[..<start]).trimmingCharacters(in: .whitespaces)
        let rest = Substring(trimmed.unicodeScalars[start...])
        guard
            let op = [">=", "<=", "!=", "=", "<", ">"].compactMap(ItemQuery.Filter.Operator.init(rawValue:))
                .first(where: { rest.unicodeScalars.starts(with: $0.rawValue.unicodeScalars) })
        else {
            throw HostError("'\(text.prefix(60))': '\(rest.prefix(2))' is not an operator (use =, !=, <, <=, > or >=)")
        }
        let valueText = String(rest.unicodeScalars.dropFirst(op.rawValue.unicodeScalars.count))
            .trimmingCharacters(in: .whitespaces)
        return ItemQuery.Filter(
            field: try field(name, in: text),
            op: op,
            value: try AssignmentParser.parseValue(valueText, field: name)
        )
    }

    /// `FIELD` (ascending) or `-FIELD` (descending).
    public static func sort(_ text: String) throws -> ItemQuery.Sort {
        let descending = text.hasPrefix("-")
        return ItemQuery.Sort(
            field: try field(String(text.dropFirst(descending ? 1 : 0)), in: text),
            descending: descending
        )
    }

    /// A field name in a query: a user field's, or `_type` or `_deleted`.
    public static func field(_ name: String, in text: String) throws -> FieldName {
        if name == "_type" || name == "_deleted" { return FieldName(unchecked: name) }
        do { return try FieldName(name) } catch {
            throw HostError("'\(text.prefix(60))': \(error)")
        }
    }
}
