import Foundation
import LansyncHost

/// What to do about a failure, in the CLI's terms. The core and the host say what was wrong and
/// which kind of failure it is (``CodedError``); the CLI adds the command that helps. (The local
/// API says the same in HTTP's terms: Problem.swift.)
enum Remedy {
    /// `error`'s line with the CLI's advice added where it has some.
    static func line(for error: any Error) -> String {
        switch error {
        case let edit as EditError: return advised(edit)
        case let store as StoreError:
            if case .edit(let edit, _) = store { return advised(edit) }
            if case .readOnly = store {
                return store.description
                    + ": an admitting machine can make it a writer again ('lansync members role NAME writer')"
            }
            return store.description
        case let host as HostError:
            guard let cause = host.cause, let advice = advice(for: cause) else { return host.description }
            return host.description.replacingOccurrences(
                of: cause.description,
                with: cause.description + ": " + advice
            )
        default: return String(describing: error)
        }
    }

    /// The edit error's words, then what to do.
    static func advised(_ error: EditError) -> String {
        advice(for: error).map { error.description + ": " + $0 } ?? error.description
    }

    /// The command that helps with `error`, if one does.
    static func advice(for error: EditError) -> String? {
        switch error {
        case .itemExists(let id): "use 'lansync set \(id) ...' to change it"
        case .unknownItem: "'lansync list' shows the ids"
        case .itemDeleted(let id): "'lansync restore \(id)' brings it back first"
        case .noConflict: "use 'lansync set' to change it"
        case .noField(let id, _): "'lansync get \(id)' shows its fields"
        default: nil
        }
    }
}
