import Foundation
public import LansyncNode
import LansyncStore
import LansyncTransport

extension DataDirectory {
    /// Runs this directory's node (or relay) until SIGINT or SIGTERM, holding the node lock.
    ///
    /// Damage is refused, never served: SQLite's quick check runs before anything is read from
    /// the file, and a damaged replica does not start.
    public func runNode(_ options: NodeOptions, log: @escaping @Sendable (String) -> Void = NodeLog.line) async throws {
        let store = try open()
        let lock = try NodeLock(directory: self)
        defer { lock.release() }
        let check = try store.quickCheck()
        if let damage = store.damage ?? check.problems.first {
            throw HostError(
                StoreError.corrupt(path: store.path, detail: damage).description
                    + "; the node does not start on a damaged replica"
            )
        }
        var options = options
        options.controlSocketPath = controlSocketPath
        options.admitting = try admittingAuthority()
        options.retireAuthority = { [self] in try dropAuthorityKey() }
        let node = try Node(options: options, store: store, identity: try tlsIdentity(), log: log)
        let task = Task { try await node.run() }
        let signals = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        do {
            try await task.value
        } catch {
            throw HostError("node stopped: \(TransportError.describing(error))")
        }
    }
}

/// The node's log: one timestamped line per event on stderr.
public enum NodeLog {
    @Sendable public static func line(_ text: String) {
        FileHandle.standardError.write(
            Data("\(WallClock.iso8601(milliseconds: WallClock.milliseconds)) \(text)\n".utf8)
        )
    }
}

extension DataDirectory {
    /// `lansync sync`: exchanges everything with each peer once (``OneShotSync``), then nudges a
    /// node running on this directory to pass on what arrived.
    public func syncOnce(
        with peers: [PeerAddress],
        timeout: Duration,
        progress: @escaping @Sendable (PeerAddress, SessionObserver.Progress) -> Void = { _, _ in }
    ) async throws -> [OneShotSync.Result] {
        let store = try open()
        let results = try await OneShotSync.run(
            store: store,
            identity: try tlsIdentity(),
            peers: peers,
            timeout: timeout,
            progress: progress
        )
        nudgeNode()
        return results
    }
}
