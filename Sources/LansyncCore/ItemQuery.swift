/// A query over items' shown field values (`lansync list --where`, the API's `where`): filters
/// that must all hold, an order, and a page.
///
/// Values keep their JSON types: numbers compare as numbers (an integer and a double of the same
/// value are equal), strings by their UTF-8 bytes, and values of different kinds never compare
/// (`priority>=2` does not match a string priority). Pure: the store finds candidates, this type
/// decides.
public struct ItemQuery: Sendable, Equatable {
    /// One condition on a field's shown value.
    public struct Filter: Sendable, Equatable {
        public enum Operator: String, Sendable, CaseIterable {
            case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
            /// A list holds an element equal to the value.
            case contains
            /// A string starts with the value (a string).
            case prefix
            /// The field has a value other than null.
            case exists
            /// The field has no value, or null.
            case missing
        }

        public let field: FieldName
        public let op: Operator
        /// Nil for `exists` and `missing`.
        public let value: Value?

        public init(field: FieldName, op: Operator, value: Value?) {
            self.field = field
            self.op = op
            self.value = value
        }

        /// Whether a field whose shown value is `shown` (nil: no such field) passes.
        public func matches(_ shown: Value?) -> Bool {
            let present = shown.flatMap { $0 == .null ? nil : $0 }
            switch op {
            case .exists: return present != nil
            case .missing: return present == nil
            case .equal: return shown.map { Self.equal($0, value ?? .null) } ?? (value == .null)
            case .notEqual: return !(shown.map { Self.equal($0, value ?? .null) } ?? (value == .null))
            case .contains:
                guard case .list(let elements)? = present, let value else { return false }
                return elements.contains { Self.equal($0, value) }
            case .prefix:
                guard case .string(let text)? = present, case .string(let start)? = value else { return false }
                return text.utf8.starts(with: start.utf8)
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                guard let present, let value, let order = Self.compare(present, value) else { return false }
                switch op {
                case .less: return order < 0
                case .lessOrEqual: return order <= 0
                case .greater: return order > 0
                default: return order >= 0
                }
            }
        }

        /// Equality with numbers compared by value.
        static func equal(_ a: Value, _ b: Value) -> Bool {
            if let order = compare(a, b) { return order == 0 }
            return a == b
        }

        /// -1, 0 or 1 for two numbers or two strings; nil for anything else.
        static func compare(_ a: Value, _ b: Value) -> Int? {
            switch (a, b) {
            case (.integer(let x), .integer(let y)): return x < y ? -1 : x > y ? 1 : 0
            case (.integer, .double), (.double, .integer), (.double, .double):
                guard let x = a.number, let y = b.number, !x.isNaN, !y.isNaN else { return nil }
                return x < y ? -1 : x > y ? 1 : 0
            case (.string(let x), .string(let y)):
                return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : x.utf8.elementsEqual(y.utf8) ? 0 : 1
            default: return nil
            }
        }
    }

    /// How results are ordered: by a field's value (missing or null first, then by kind: bool,
    /// number, string, link, list; descending reverses that), then by id (ascending either way),
    /// so that the order is total and pages never overlap.
    public struct Sort: Sendable, Equatable {
        public let field: FieldName
        public let descending: Bool

        public init(field: FieldName, descending: Bool) {
            self.field = field
            self.descending = descending
        }
    }

    public var filters: [Filter]
    public var sort: Sort?

    public init(filters: [Filter] = [], sort: Sort? = nil) {
        self.filters = filters
        self.sort = sort
    }

    /// Whether an item whose shown values are `values` passes every filter.
    public func matches(_ values: [FieldName: Value]) -> Bool {
        filters.allSatisfy { $0.matches(values[$0.field]) }
    }

    /// True if `a` (its sort value, then id) comes before `b` in this query's order.
    public func precedes(_ a: (value: Value?, id: String), _ b: (value: Value?, id: String)) -> Bool {
        guard let sort else { return a.id.utf8.lexicographicallyPrecedes(b.id.utf8) }
        let order = Self.order(a.value, b.value)
        if order != 0 { return sort.descending ? order > 0 : order < 0 }
        return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
    }

    /// The sort order of two values: missing (or null) first, then bools, numbers, strings, links
    /// and lists; within a kind, by value.
    static func order(_ a: Value?, _ b: Value?) -> Int {
        let ra = rank(a)
        let rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        guard let a, let b else { return 0 }
        if let order = Filter.compare(a, b) { return order }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        default: return a == b ? 0 : (a < b ? -1 : 1)
        }
    }

    /// Where a value's kind comes in the order: 0 missing or null, 1 bool, 2 number, 3 string,
    /// 4 link, 5 list.
    public static func rank(_ value: Value?) -> Int {
        switch value {
        case nil, .null?: 0
        case .bool?: 1
        case .integer?, .double?: 2
        case .string?: 3
        case .ref?: 4
        case .list?: 5
        }
    }
}

extension Value {
    /// The value as a Double, for numbers.
    public var number: Double? {
        switch self {
        case .integer(let n): Double(n)
        case .double(let d): d
        default: nil
        }
    }
}
