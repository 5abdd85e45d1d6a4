/// A stable name for a kind of failure, the same whatever the words and whichever layer found it:
/// what the local API maps to an HTTP status and the CLI to its remedy. The words (``CodedError/reason``)
/// may change between releases; a code does not.
public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) { self.name = name }

    public var description: String { name }

    /// The input is misspelt or malformed: fix it and try again.
    public static let badInput = ErrorCode("bad-input")
    /// The input is well formed but past one of ``Limits`` (a value's size or nesting, the number
    /// of fields, a name's length in bytes, an integer past 64 bits).
    public static let overLimit = ErrorCode("over-limit")
    /// What the input names is not there (an item, a history entry, a member).
    public static let notFound = ErrorCode("not-found")
    /// The input is sound, but what it names is in a state that refuses it (an item that exists
    /// already, is deleted, is not deleted, has no conflict to settle; a field that is no list).
    public static let conflict = ErrorCode("conflict")
    /// The replica file is damaged: nothing is written to it until it is repaired.
    public static let damaged = ErrorCode("damaged")
    /// Something outside the input stands in the way for now (a lock held, a full disk, a peer
    /// that cannot be reached or is busy): trying again later may work.
    public static let unavailable = ErrorCode("unavailable")
    /// The system refused access (file permissions).
    public static let permission = ErrorCode("permission")
    /// This machine may only read (a reader in the cluster, Docs/SECURITY.md "Roles"): its edits
    /// would be refused by every member.
    public static let readOnly = ErrorCode("read-only")
    /// A peer refused this node (another cluster's, revoked): trying again will not help.
    public static let refused = ErrorCode("refused")
    /// What the input asks for was collected (a change-feed position behind a collection):
    /// start again from a snapshot.
    public static let gone = ErrorCode("gone")
    /// Anything else.
    public static let failed = ErrorCode("failed")
}

/// An error that says which kind of failure it is (``code``) and why (``reason``, one line with
/// no advice for any particular front end: the CLI and the local API each add their own).
public protocol CodedError: Error, CustomStringConvertible {
    var code: ErrorCode { get }
    var reason: String { get }
}

extension CodedError {
    public var reason: String { description }
}
