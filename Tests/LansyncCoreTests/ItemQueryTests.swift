import LansyncCore
import LansyncTestSupport
import Testing

/// The query language's semantics on values with their JSON types.
@Suite struct ItemQueryTests {
    typealias Filter = ItemQuery.Filter
    let n = FieldName.named("n")

    func passes(_ op: Filter.Operator, _ value: Value?, _ shown: Value?) -> Bool {
        Filter(field: n, op: op, value: value).matches(shown)
    }

    @Test func numbersCompareAsNumbersAndKindsNeverMix() {
        #expect(passes(.equal, .integer(3), .double(3.0)), "3 and 3.0 are the same number")
        #expect(passes(.greaterOrEqual, .integer(2), .integer(2)) && passes(.greater, .integer(2), .double(2.5)))
        #expect(!passes(.greater, .integer(2), .string("10")), "a string is not compared with a number")
        #expect(!passes(.less, .integer(2), .string("1")) && !passes(.less, .integer(2), nil))
        #expect(passes(.less, .string("b"), .string("a")) && !passes(.less, .string("a"), .string("ab")), "byte order")
        #expect(passes(.notEqual, .integer(1), nil), "a missing field differs from every value")
        #expect(passes(.equal, .null, nil) && passes(.equal, .null, .null), "=null matches missing and null")
        #expect(!passes(.greater, .double(.nan), .double(1)), "NaN compares with nothing")
    }

    @Test func listsStringsAndPresence() {
        let tags = Value.list([.string("garage"), .integer(7)])
        #expect(passes(.contains, .string("garage"), tags) && passes(.contains, .double(7), tags))
        #expect(!passes(.contains, .string("gar"), tags) && !passes(.contains, .string("garage"), .string("garage")))
        #expect(
            passes(.prefix, .string("Fix"), .string("Fix the bike")) && !passes(.prefix, .string("fix"), .string("Fix"))
        )
        #expect(passes(.exists, nil, .integer(0)) && !passes(.exists, nil, .null) && !passes(.exists, nil, nil))
        #expect(passes(.missing, nil, nil) && passes(.missing, nil, .null) && !passes(.missing, nil, .bool(false)))
    }

    @Test func theOrderIsTotalAndStable() {
        let query = ItemQuery(sort: ItemQuery.Sort(field: n, descending: false))
        let entries: [(value: Value?, id: String)] = [
            (.string("b"), "1"), (.integer(2), "2"), (nil, "3"), (.double(1.5), "4"), (.bool(true), "5"),
            (.integer(2), "0"), (.list([]), "6"),
        ]
        let sorted = entries.sorted { query.precedes($0, $1) }.map(\.id)
        #expect(sorted == ["3", "5", "4", "0", "2", "1", "6"], "missing, bool, numbers (ties by id), string, list")
        let down = ItemQuery(sort: ItemQuery.Sort(field: n, descending: true))
        #expect(entries.sorted { down.precedes($0, $1) }.map(\.id) == ["6", "1", "0", "2", "4", "5", "3"])
        // Without a sort: by id, byte-wise.
        #expect(ItemQuery().precedes((nil, "B"), (nil, "a")))
    }
}
