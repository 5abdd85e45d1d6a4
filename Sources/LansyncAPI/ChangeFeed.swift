import Foundation
import HTTPTypes
import Hummingbird
import LansyncHost
import NIOCore

/// `GET /v1/changes`: the replica's change feed (``ChangeEntry``), after `since`, filtered by
/// `type`, `item` and `field`. As JSON, one page: `{"changes": [...], "last": SEQ}` (pass `last`
/// as the next `since`). With `Accept: text/event-stream`, a stream of Server-Sent Events that
/// never ends: each change is an event whose `id` is its sequence number, so a client that
/// reconnects with `Last-Event-ID` resumes exactly after the last one it got, with no gap and no
/// repeat; a comment every 15 s keeps idle connections (and proxies) honest. With `sync=true`, the
/// stream also carries a `sync` event (no id, data `{}`) each time peers' acknowledgements are
/// recorded: an item edited here that is not yet SYNCED may have moved, so a page that shows sync
/// states reads those items again instead of polling.
///
/// A stream ends (its connection closed) within ``Credentials/recheck`` of its credential being
/// rotated away or logged out: `stillAllowed` is asked on every wake and between them.
struct ChangeFeed: Sendable {
    let node: RunningNode
    /// Whether the request's credential is still accepted (``Credentials/stillAccepts(_:)``).
    let stillAllowed: @Sendable () -> Bool

    static let heartbeat: Duration = .seconds(15)

    struct Filter: Sendable {
        var type: String?
        var item: ItemID?
        var field: FieldName?
        /// `sync=true`: acknowledgements as `sync` events too (streams only).
        var sync = false
    }

    func respond(to request: Request) async throws -> Response {
        let query = try QueryString(request.uri.query)
        var filter = Filter()
        filter.type = try query["type"].map(Routes.type)
        filter.item = try query["item"].map { try ItemID($0) }
        filter.field = try query["field"].map(Routes.field)
        filter.sync =
            try query["sync"].map { text -> Bool in
                guard text == "true" || text == "false" else {
                    throw Problem(.badRequest, "sync must be true or false")
                }
                return text == "true"
            } ?? false
        let stream = request.headers[.accept]?.contains("text/event-stream") == true
        let resumeHeader = HTTPField.Name("Last-Event-ID")!
        let sinceText = (stream ? request.headers[resumeHeader] : nil) ?? query["since"]
        let since = try sinceText.map { text -> UInt64 in
            guard let n = UInt64(text) else {
                throw Problem(.badRequest, "since (or Last-Event-ID) must be a sequence number, like 0 or 1234")
            }
            return n
        }
        if stream {
            let start: UInt64
            if let since {
                start = since
            } else {
                start = try await node.blocking { [node] in try node.replica.latestChange() }
            }
            return try await events(after: start, filter)
        }
        let limit =
            try query["limit"].map { text -> Int in
                guard let n = Int(text), (1...10_000).contains(n) else {
                    throw Problem(.badRequest, "limit must be a number from 1 to 10000")
                }
                return n
            } ?? 1000
        // With a filter, the page may end before the feed does: `last` is where the next page
        // starts either way.
        let (entries, last) = try await node.blocking { [node, filter] in
            try node.replica.changes(
                since: since ?? 0,
                limit: limit,
                type: filter.type,
                item: filter.item,
                field: filter.field
            )
        }
        return json(entries.pageJSONText(last: last))
    }

    /// What wakes an event stream.
    enum Wake: Sendable {
        /// The replica changed: send the changes after the last one sent.
        case change
        /// Peers' acknowledgements were recorded (`sync=true` only).
        case sync
        /// Nothing for a while: a comment keeps the connection honest.
        case beat
    }

    func events(after since: UInt64, _ filter: Filter) async throws -> Response {
        let node = self.node
        let stillAllowed = self.stillAllowed
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                // Watch first, then read: a change committed in between wakes the loop.
                let (id, wakes) = node.watchChanges()
                let acks = filter.sync ? node.watchAcknowledgements() : nil
                let (events, continuation) = AsyncStream<Wake>.makeStream(bufferingPolicy: .bufferingNewest(4))
                let forward = Task {
                    for await _ in wakes { continuation.yield(.change) }
                    continuation.finish()
                }
                let acknowledged = Task {
                    guard let acks else { return }
                    for await _ in acks.changes { continuation.yield(.sync) }
                }
                // Between wakes, the credential is looked at every `recheck`; once it is gone the
                // stream of wakes ends, and with it the answer (the loop below checks again
                // before sending anything still buffered).
                let beat = Task {
                    var sinceBeat: Duration = .zero
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Credentials.recheck)
                        guard stillAllowed() else { return continuation.finish() }
                        sinceBeat += Credentials.recheck
                        if sinceBeat >= Self.heartbeat {
                            sinceBeat = .zero
                            continuation.yield(.beat)
                        }
                    }
                }
                defer {
                    forward.cancel()
                    acknowledged.cancel()
                    beat.cancel()
                    node.stopWatchingChanges(id)
                    if let acks { node.stopWatchingAcknowledgements(acks.id) }
                }
                var last = since
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                try await Self.drain(after: &last, node: node, filter, stillAllowed: stillAllowed, to: &writer)
                for await wake in events {
                    // Rotated away or logged out: the stream ends here, with nothing more sent.
                    guard stillAllowed() else { break }
                    switch wake {
                    case .change:
                        try await Self.drain(after: &last, node: node, filter, stillAllowed: stillAllowed, to: &writer)
                    case .sync: try await writer.write(ByteBuffer(string: "event: sync\ndata: {}\n\n"))
                    case .beat: try await writer.write(ByteBuffer(string: ": still here\n\n"))
                    }
                }
                try await writer.finish(nil)
            }
        )
    }

    /// Writes the changes after `last` that `filter` lets through, a page of 1,000 at a time,
    /// until none is left or the credential is gone. `last` moves to the end of each page read,
    /// even past changes the filter left out, so a filtered client does not read them again on
    /// every wake.
    private static func drain(
        after last: inout UInt64,
        node: RunningNode,
        _ filter: Filter,
        stillAllowed: @Sendable () -> Bool,
        to writer: inout any ResponseBodyWriter
    ) async throws {
        while stillAllowed() {
            let since = last
            let page = try await node.blocking {
                try node.replica.changes(
                    since: since,
                    limit: 1000,
                    type: filter.type,
                    item: filter.item,
                    field: filter.field
                )
            }
            last = page.last
            // Revoked while the page was read: none of it goes out.
            guard stillAllowed() else { return }
            if !page.entries.isEmpty {
                var text = ""
                for entry in page.entries {
                    text += "id: \(entry.seq)\nevent: change\ndata: \(entry.jsonText)\n\n"
                }
                try await writer.write(ByteBuffer(string: text))
            }
            if page.entries.count < 1000 { return }
        }
    }
}
