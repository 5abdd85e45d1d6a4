import LansyncCore
import LansyncTestSupport
import Testing

/// Every edit error says which kind of failure it is, and the pure core speaks no front end's
/// language: the CLI and the local API add their own advice (Remedy.swift, Problem.swift).
@Suite struct ErrorCodeTests {
    static let id = ItemID.named("x")
    static let field = FieldName.named("f")
    static let all: [EditError] = [
        .invalidItemID("bad id"), .invalidFieldName("bad name", reason: "why"), .invalidType(""),
        .itemExists(id), .unknownItem(id), .itemDeleted(id), .itemNotDeleted(id), .noAssignments,
        .notAList(id, field, kind: "string"), .valueTooLarge(field, bytes: 2 << 20),
        .valueTooDeep(field, nesting: 99), .tooManyFields(id, count: 300), .noConflict(id, field),
        .noField(id, field),
    ]

    @Test func eachEditErrorHasItsKind() {
        #expect(EditError.unknownItem(Self.id).code == .notFound)
        #expect(EditError.noField(Self.id, Self.field).code == .conflict, "the item is there: not a 404")
        #expect(
            EditError.itemDeleted(Self.id).code == .conflict
                && EditError.noConflict(Self.id, Self.field).code == .conflict
        )
        #expect(EditError.valueTooLarge(Self.field, bytes: 2 << 20).code == .overLimit)
        #expect(EditError.noAssignments.code == .badInput && EditError.invalidItemID("?").code == .badInput)
        #expect(EditError.invalidFieldName(String(repeating: "a", count: 200), reason: "too long").code == .overLimit)
    }

    @Test func theCoreSpeaksNoFrontEndsLanguage() {
        for error in Self.all {
            #expect(!error.description.contains("lansync "), "CLI text in the core: \(error.description)")
            #expect(!error.description.contains("\n") && !error.description.isEmpty)
        }
    }
}
