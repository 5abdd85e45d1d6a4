import LansyncCore
import LansyncIdentity
import LansyncStore

/// A command failure: printed as one line on stderr (`Error: ...`), exit status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String

    init(_ message: String) { description = message }

    init(_ error: StoreError) { description = error.message }
    init(_ error: EditError) { description = error.message }
    init(_ error: IdentityError) { description = error.message }
}
