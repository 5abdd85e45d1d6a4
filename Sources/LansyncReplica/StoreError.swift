import Foundation
public import LansyncCore

/// Why the replica could not be opened, read or changed. A failed change leaves the file as it
/// was (every change is one transaction). ``description`` is one line: what was wrong, what to do.
public enum StoreError: CodedError, Equatable, Sendable {
    /// The merge core refused an edit (`index`: its position in a batch of edits, 0 for one edit).
    case edit(EditError, index: Int)
    case notInitialised(directory: String)
    case alreadyInitialised(directory: String)
    case notAReplica(path: String, reason: String)
    case newerSchema(path: String)
    case corrupt(path: String, detail: String)
    case io(String)
    /// The system refused to let this process read the replica (``FileAccess``).
    case permissionDenied(String)
    /// A peer sent field deltas taken against writes this replica does not hold (its version
    /// vector does not cover the batch's base): merging them could lose a removal, so the batch is
    /// refused whole and the session ends; the next one starts from what this replica holds.
    case staleDelta(base: VersionVector, held: VersionVector)
    /// A peer's batch names writers that would take the replica past ``WriterBounds/total``:
    /// refused whole, nothing merged.
    case tooManyWriters(held: Int, new: Int, limit: Int)
    /// A peer's batch would bring more writers new to the replica than its session may still
    /// bring (``WriterBounds/perSession``): refused whole; the next session carries on.
    case tooManyNewWriters(new: Int, perSession: Int)
    /// A change-feed reader asked for changes after `since`, but collection removed changes
    /// numbered up to `floor` (Docs/API.md, "The change feed"): it must start again from a
    /// snapshot.
    case feedCollected(since: UInt64, floor: UInt64)
    /// A session's batch or stream end arrived after this replica rejoined from a snapshot
    /// (Docs/MERGE.md, "Coming back after being away"): the peer computed its stream from the
    /// vector the replica held before, so nothing of it is recorded; the next session starts
    /// from the snapshot.
    case rejoinedSince(session: UInt64, replica: UInt64)
    /// This replica's member is a reader (Docs/SECURITY.md, "Roles"), `why` says since when and
    /// who made it one: a local edit is refused before it is written, since every member would
    /// refuse it.
    case readOnly(why: String)

    public var description: String {
        switch self {
        case .edit(let error, _): error.description
        case .notInitialised(let dir):
            "\(dir) holds no lansync replica: run 'lansync init --cluster FILE' (or pass --dir)"
        case .alreadyInitialised(let dir):
            "\(dir) already holds a lansync replica: use another --dir, or remove it first"
        case let .notAReplica(path, reason):
            "\(path) is not a lansync replica (\(reason)): check --dir, or restore the file from a backup"
        case .newerSchema(let path):
            "\(path) was written by a newer lansync: upgrade lansync to use it"
        case let .corrupt(path, detail):
            "\(path) is damaged (\(Self.oneLine(detail))): run 'lansync check' for a full report, then 'lansync repair' to rebuild it from what is sound and from peers, or restore a backup"
        case .io(let message): message
        case .permissionDenied(let message): message
        case let .staleDelta(base, held):
            "a peer sent changes against \(base), more than this replica holds (\(held)); nothing was merged, and the next session starts afresh"
        case let .tooManyWriters(held, new, limit):
            "a batch names \(new) writer(s) new to this replica, which holds \(held) of its limit of \(limit); nothing was merged (raise the node's --max-writers if the cluster really has that many)"
        case let .tooManyNewWriters(new, perSession):
            "a batch names \(new) writer(s) new to this replica, past the \(perSession) one session may bring (--max-new-writers); nothing was merged, and the next session carries on"
        case let .feedCollected(since, floor):
            "changes after \(since) are no longer all kept (collection removed deleted items' changes up to \(floor)): read the items again as a snapshot, then follow the feed from its latest number"
        case .readOnly(let why):
            "this machine may only read (\(why)): every member would refuse its edits"
        case .rejoinedSince:
            "this node rejoined from a snapshot while the session ran: nothing of it was recorded, and the next session starts from the snapshot"
        }
    }
}

extension StoreError {
    public var code: ErrorCode {
        switch self {
        case .edit(let error, _): error.code
        case .notInitialised, .notAReplica: .notFound
        case .alreadyInitialised: .conflict
        case .newerSchema: .failed
        case .corrupt: .damaged
        case .io: .unavailable
        case .permissionDenied: .permission
        case .staleDelta, .tooManyNewWriters, .rejoinedSince: .unavailable
        case .tooManyWriters: .refused
        case .feedCollected: .gone
        case .readOnly: .readOnly
        }
    }

    /// `text` on one line and at most 200 characters: SQLite's reports can span many lines, and an
    /// error is one line.
    package static func oneLine(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }.joined(separator: "; ")
        return flat.count > 200 ? String(flat.prefix(199)) + "…" : flat
    }
}

extension StoreError {
    /// True for ``rejoinedSince(session:replica:)``.
    public var isRejoinedSince: Bool {
        if case .rejoinedSince = self { return true }
        return false
    }
}
