import AsyncAlgorithms
import Foundation
import LansyncCore
import LansyncNode
import LansyncTransport
import LansyncWire
import NIOCore

/// One simulated member: a real TLS session with the relay, run by the node's own
/// ``SessionMachine``, over an in-memory replica (the merge core's ``Replica``) instead of SQLite,
/// so that a thousand of them fit in one process beside the relay on a 2-core machine.
///
/// What the relay sees is what a node would send: the member's certificate, its hello, its
/// deltas, its acknowledgements, its summaries. Each member owns one item (`m<index>`) and sets its
/// field `n` to the number of its edit; every other member records when it first holds that
/// number (``Deliveries``).
struct Member: Sendable {
    let index: Int
    let transport: Transport
    let clusterID: NodeID
    let nodeID: NodeID
    let deliveries: Deliveries
    let counters: LoadCounters

    /// What arrives at the session's loop.
    enum Input: Sendable {
        case message(Message)
        case invalid(WireError)
        case tick
        case edit
        case end
        case peerClosed
    }

    var item: ItemID { ItemID(unchecked: "m\(index)") }

    /// Connects (again after a lost connection) and runs sessions until the run's end, editing on
    /// `schedule` while a session is up.
    func run(relay: (host: String, port: Int), schedule: EditSchedule) async {
        var replica = Replica(nodeID: nodeID)
        var edited = 0
        while ContinuousClock.now < schedule.end, !Task.isCancelled {
            let connection: PeerConnection
            do {
                connection = try await transport.connect(host: relay.host, port: relay.port, timeout: .seconds(20))
            } catch {
                counters.add(\.connectFailures)
                counters.note("connect: \(error)")
                try? await Task.sleep(for: .milliseconds(200))
                continue
            }
            counters.add(\.connects)
            let ended = await session(on: connection, replica: &replica, edited: &edited, schedule: schedule)
            if !ended {
                counters.add(\.sessionsLost)
                if schedule.begun { counters.add(\.lostWhileEditing) }
            }
            if ended { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// One session; true when the run is over (not a lost connection).
    private func session(
        on connection: PeerConnection,
        replica: inout Replica,
        edited: inout Int,
        schedule: EditSchedule
    ) async -> Bool {
        var config = SessionMachine.SessionConfig(
            nodeID: nodeID,
            clusterID: clusterID,
            role: .peer,
            name: "m\(index)",
            authenticatedPeer: connection.peerNodeID
        )
        config.clock = UInt64(Date().timeIntervalSince1970 * 1000)
        var machine = SessionMachine(config: config)
        var outgoing: [DeltaBatch] = []
        var counted = false
        var runOver = false
        let peer = connection.peerNodeID
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                let (wakes, waking) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(8))
                defer { waking.finish() }
                // The member's clock: its edits at their times, then the run's end.
                let clock = Task { [index] in
                    var next = try await schedule.first(for: index)
                    // Edits missed while no session was up are skipped, not made in a burst.
                    while next < .now { next = next + schedule.interval }
                    while next < schedule.editsEnd {
                        try await Task.sleep(until: next)
                        waking.yield(.edit)
                        next = next + schedule.interval
                    }
                    try await Task.sleep(until: schedule.end)
                    waking.yield(.end)
                }
                defer { clock.cancel() }
                let messages = inbound.map { incoming -> Input in
                    switch incoming {
                    case .message(let m): .message(m)
                    case .invalid(let e): .invalid(e)
                    }
                }
                let ticks = AsyncTimerSequence.repeating(every: .seconds(5)).map { _ in Input.tick }
                var inputs = merge(chain(messages, [Input.peerClosed].async), ticks, wakes).makeAsyncIterator()
                let resume = replica.resume(from: peer)
                var queue = machine.handle(
                    .start(
                        versionVector: replica.versionVector,
                        resume: resume?.covers ?? VersionVector(),
                        resumeFor: resume?.incarnation,
                        now: .now
                    )
                )[...]
                loop: while true {
                    while let action = queue.popFirst() {
                        switch action {
                        case .send(let message):
                            try await outbound.write(message)
                        case let .apply(sequence, batch), let .applyFinal(sequence, batch):
                            let before = replica.changes
                            let incarnation = machine.peer?.writer ?? peer
                            let wall = UInt64(Date().timeIntervalSince1970 * 1000)
                            guard replica.apply(batch, from: peer, incarnation: incarnation, wallMilliseconds: wall)
                            else {
                                counters.add(\.refusedBatches)
                                break loop
                            }
                            if case .applyFinal = action { replica.completeStream(from: peer) }
                            let changed = Int(replica.changes - before)
                            deliveries.received(batch, by: index, in: replica)
                            queue += machine.handle(
                                .applied(sequence: sequence, now: .now, changed: changed, keep: true)
                            )
                        case .completeStream:
                            replica.completeStream(from: peer)
                        case let .startDelta(vv, _, base):
                            outgoing = replica.delta(
                                for: vv,
                                maxUpdates: WireLimits.maxUpdatesPerBatch,
                                deltaBase: base
                            )
                        case .produceBatch:
                            let next = outgoing.isEmpty ? nil : outgoing.removeFirst()
                            queue += machine.handle(.produced(next, now: .now, last: next != nil && outgoing.isEmpty))
                        case .sendSummary:
                            try await outbound.write(.summary(versionVector: replica.versionVector))
                        case .readVersion:
                            queue += machine.handle(.localChanged(localVersion: replica.versionVector, now: .now))
                        case .wake(let after):
                            Task {
                                try? await Task.sleep(for: after)
                                waking.yield(.tick)
                            }
                        case .peerReady(let hello):
                            replica.meet(hello.nodeID, incarnation: hello.writer)
                        case .upToDate:
                            if !counted {
                                counted = true
                                counters.add(\.upToDate)
                            }
                        case .finished:
                            break loop
                        case .close(let error, let peerError):
                            if let error { counters.note("closed: \(error)") }
                            if let peerError { counters.note("relay said: \(peerError)") }
                            break loop
                        }
                    }
                    guard let input = try await inputs.next() else { break loop }
                    switch input {
                    case .message(let message):
                        queue += machine.handle(.received(message, now: .now))
                    case .invalid(let error):
                        queue += machine.handle(.receivedInvalid(error, now: .now))
                    case .tick:
                        queue += machine.handle(.tick(now: .now, localVersion: replica.versionVector))
                    case .edit:
                        edited += 1
                        let edit: ItemEdit =
                            edited == 1
                            ? .create(type: "load", assignments: [.set(FieldName(unchecked: "n"), .integer(1))])
                            : .update([.set(FieldName(unchecked: "n"), .integer(Int64(edited)))])
                        let wall = UInt64(Date().timeIntervalSince1970 * 1000)
                        do {
                            try replica.apply(edit, to: item, wallMilliseconds: wall)
                        } catch {
                            counters.add(\.refusedEdits)
                            continue loop
                        }
                        deliveries.edited(member: index, number: edited)
                        queue += machine.handle(
                            .localChanged(localVersion: replica.versionVector, now: .now, eager: true)
                        )
                    case .end:
                        runOver = true
                        break loop
                    case .peerClosed:
                        counters.note("the relay closed the connection")
                        break loop
                    }
                }
            }
        } catch {
            counters.add(\.connectionErrors)
            counters.note("connection: \(TransportError.describing(error))")
        }
        if counted { counters.add(\.upToDate, -1) }
        return runOver || ContinuousClock.now >= schedule.end
    }
}
