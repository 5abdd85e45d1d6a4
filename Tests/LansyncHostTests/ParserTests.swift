import LansyncCore
import LansyncHost
import LansyncTestSupport
import Testing

/// The CLI's assignments and query conditions split at the operator's scalars, so a value that
/// starts with a combining mark or an emoji modifier (which Swift joins with the "=" into one
/// character) is still a value. Found by fuzzing the API with schemathesis.
@Suite struct ParserTests {
    let marks = ["\u{301}é", "\u{1F3FB}x", "\u{AD}/7"]

    @Test func anAssignmentsValueMayStartWithACombiningMark() throws {
        for mark in marks {
            #expect(try AssignmentParser.parse("note=" + mark) == .set(.named("note"), .string(mark)))
            #expect(try AssignmentParser.parse("tags+=" + mark) == .add(.named("tags"), .string(mark)))
            #expect(try AssignmentParser.parse("tags-=" + mark) == .remove(.named("tags"), .string(mark)))
        }
    }

    @Test func aConditionsValueMayStartWithACombiningMark() throws {
        for mark in marks {
            #expect(
                try QueryParser.filter("note=" + mark)
                    == ItemQuery.Filter(field: .named("note"), op: .equal, value: .string(mark))
            )
            #expect(
                try QueryParser.filter("note>=" + mark)
                    == ItemQuery.Filter(field: .named("note"), op: .greaterOrEqual, value: .string(mark))
            )
        }
    }
}
