import NIOConcurrencyHelpers

/// Tells every open session that the local replica changed (a local edit, or a batch from another
/// peer), so each pushes what its peer lacks. Notifications coalesce: a session that is busy
/// sees one pending change, however many happened.
public final class ChangeHub: Sendable {
    private let subscribers = NIOLockedValueBox<[Int: AsyncStream<Void>.Continuation]>([:])
    private let nextID = NIOLockedValueBox(0)

    public init() {}

    /// A stream that yields once per (coalesced) change until the subscription is dropped.
    public func subscribe() -> (id: Int, changes: AsyncStream<Void>) {
        let id = nextID.withLockedValue {
            $0 += 1
            return $0
        }
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        subscribers.withLockedValue { $0[id] = continuation }
        return (id, stream)
    }

    public func unsubscribe(_ id: Int) {
        subscribers.withLockedValue { $0.removeValue(forKey: id) }?.finish()
    }

    /// Announces a change; `except` skips the subscriber that caused it.
    public func notify(except: Int? = nil) {
        let targets = subscribers.withLockedValue { $0.filter { $0.key != except }.map(\.value) }
        for continuation in targets { continuation.yield() }
    }
}
