import Foundation
import HTTPTypes
import LansyncHost
import LansyncJSON
import Testing

/// The `/v1` routes in process (no socket, no node process): the same contract as the binary's
/// APITests, checked against the router itself, and what only a test in the node's process can
/// see: an edit through the API tells the node directly.
@Suite struct RoutesTests {
    static func first(_ json: JSON?) -> JSON? {
        guard case .array(let elements)? = json else { return nil }
        return elements.first
    }

    @Test func everyRequestNeedsTheToken() async throws {
        let api = try InProcessAPI("routes-token")
        let answer = try await api.send(.get, "/v1/items", authorized: false)
        #expect(answer.status == .unauthorized)
        #expect(answer.headers[.contentType] == "application/problem+json")
        #expect(answer.body.contains("lansync api-token"), "\(answer.body)")
    }

    @Test func anItemIsCreatedReadPatchedAndDeleted() async throws {
        let api = try InProcessAPI("routes-items")
        let created = try await api.send(.post, "/v1/items", body: #"{"type":"task","fields":{"title":"Climb"}}"#)
        #expect(created.status == .created)
        let item = try JSON(parsing: created.body)
        guard case .string(let id)? = item["id"] else {
            Issue.record("no id: \(created.body)")
            return
        }
        #expect(created.headers[.location] == "/v1/items/\(id)")
        #expect(item["fields"]?["title"] == .string("Climb") && item["type"] == .string("task"))
        #expect(item["sync"]?["state"] == .string("DIRTY"), "an edit no peer has: \(created.body)")

        let patched = try await api.send(.patch, "/v1/items/\(id)", body: #"{"set":{"n":2},"add":{"tags":"x"}}"#)
        #expect(patched.status == .ok)
        let after = try JSON(parsing: patched.body)
        #expect(after["fields"]?["n"] == .integer(2) && after["fields"]?["tags"] == .array([.string("x")]))

        let listed = try JSON(parsing: try await api.send(.get, "/v1/items?limit=10").body)
        #expect(Self.first(listed["items"])?["id"] == .string(id) && listed["next"] == .null)

        #expect(try await api.send(.delete, "/v1/items/\(id)").status == .ok)
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items").body)["items"] == .array([]))
        let history = try JSON(parsing: try await api.send(.get, "/v1/items/\(id)/history?field=title").body)
        #expect(Self.first(history)?["write"] != nil, "\(history)")
    }

    /// A patch's `type` changes the item's type in the same edit as its fields; one that is no
    /// text is a 400 and changes nothing; the type's history is shown by default.
    @Test func aPatchChangesTheType() async throws {
        let api = try InProcessAPI("routes-retype")
        _ = try await api.send(.post, "/v1/items", body: #"{"id":"t1","type":"task","fields":{"title":"Climb"}}"#)
        let patched = try await api.send(.patch, "/v1/items/t1", body: #"{"type":"note","set":{"title":"Climbed"}}"#)
        #expect(patched.status == .ok, "\(patched.body)")
        let item = try JSON(parsing: patched.body)
        #expect(item["type"] == .string("note") && item["fields"]?["title"] == .string("Climbed"), "\(item)")
        let bad = try await api.send(.patch, "/v1/items/t1", body: #"{"type":5}"#)
        #expect(bad.status == .badRequest && bad.body.contains("type"), "\(bad.body)")
        let empty = try await api.send(.patch, "/v1/items/t1", body: #"{"type":""}"#)
        #expect(empty.status != .ok, "\(empty.body)")
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items/t1").body)["type"] == .string("note"))
        guard case .array(let history) = try JSON(parsing: try await api.send(.get, "/v1/items/t1/history").body) else {
            Issue.record("history is no array")
            return
        }
        let types = history.filter { $0["field"] == .string("_type") }.compactMap { $0["write"] }
        #expect(types.count == 2, "the type's two writes: \(history)")
    }

    /// A patch's `unset` removes fields; one not shown is a 409 (the item is there: a 404 would
    /// say it is not) and changes nothing; one that is no list of names is a 400.
    @Test func aPatchRemovesFields() async throws {
        let api = try InProcessAPI("routes-unset")
        _ = try await api.send(.post, "/v1/items", body: #"{"id":"u1","fields":{"a":1,"b":2}}"#)
        let patched = try await api.send(.patch, "/v1/items/u1", body: #"{"unset":["a"],"set":{"c":3}}"#)
        #expect(patched.status == .ok, "\(patched.body)")
        #expect(try JSON(parsing: patched.body)["fields"] == .object([("b", .integer(2)), ("c", .integer(3))]))
        let missing = try await api.send(.patch, "/v1/items/u1", body: #"{"unset":["a"]}"#)
        #expect(missing.status == .conflict && missing.body.contains("has no field 'a'"), "\(missing.body)")
        let bad = try await api.send(.patch, "/v1/items/u1", body: #"{"unset":"b"}"#)
        #expect(bad.status == .badRequest, "\(bad.body)")
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items/u1").body)["fields"]?["b"] == .integer(2))
    }

    /// `PATCH`, `DELETE /v1/items?where=` and `POST /v1/items/restore?where=` act on what the
    /// query selects, in one transaction; without `where` they are refused.
    @Test func queryScopedEditsChangeWhatTheQuerySelects() async throws {
        let api = try InProcessAPI("routes-bulk")
        for (id, status) in [("b1", "done"), ("b2", "done"), ("b3", "open")] {
            _ = try await api.send(
                .post,
                "/v1/items",
                body: #"{"id":"\#(id)","type":"task","fields":{"status":"\#(status)"}}"#
            )
        }
        let patched = try await api.send(.patch, "/v1/items?where=status%3Ddone", body: #"{"set":{"archived":true}}"#)
        #expect(patched.status == .ok, "\(patched.body)")
        #expect(
            try JSON(parsing: patched.body)
                == .object([("changed", .integer(2)), ("ids", .array([.string("b1"), .string("b2")]))])
        )
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items/b1").body)["fields"]?["archived"] == .bool(true))
        let everything = try await api.send(.delete, "/v1/items")
        #expect(everything.status == .badRequest && everything.body.contains("where="), "\(everything.body)")
        let deleted = try await api.send(.delete, "/v1/items?where=archived%3Dtrue")
        #expect(try JSON(parsing: deleted.body)["changed"] == .integer(2), "\(deleted.body)")
        #expect(try await api.send(.get, "/v1/items/b3").status == .ok)
        let restored = try await api.send(.post, "/v1/items/restore?where=status%3Ddone&type=task")
        #expect(try JSON(parsing: restored.body)["changed"] == .integer(2), "\(restored.body)")
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items/b2").body)["deleted"] == .bool(false))
    }

    /// `POST /v1/items/batch` changes the items named in one transaction: all, or none when one
    /// is refused (an unknown id), with a clear problem.
    @Test func aBatchChangesTheItemsNamedAllOrNone() async throws {
        let api = try InProcessAPI("routes-batch")
        for id in ["c1", "c2"] {
            _ = try await api.send(.post, "/v1/items", body: #"{"id":"\#(id)","fields":{"n":0}}"#)
        }
        let set = try await api.send(.post, "/v1/items/batch", body: #"{"ids":["c1","c2"],"patch":{"set":{"n":1}}}"#)
        let setAnswer = try JSON(parsing: set.body)
        #expect(set.status == .ok && setAnswer["changed"] == .integer(2), "\(set.body)")
        let refused = try await api.send(
            .post,
            "/v1/items/batch",
            body: #"{"ids":["c1","nope"],"patch":{"set":{"n":2}}}"#
        )
        #expect(refused.status == .notFound, "\(refused.body)")
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items/c1").body)["fields"]?["n"] == .integer(1))
        let bad = try await api.send(.post, "/v1/items/batch", body: #"{"ids":["c1"],"delete":true,"restore":true}"#)
        #expect(bad.status == .badRequest, "\(bad.body)")
        let deleted = try await api.send(.post, "/v1/items/batch", body: #"{"ids":["c1","c2"],"delete":true}"#)
        #expect(try JSON(parsing: deleted.body)["changed"] == .integer(2))
        #expect(try JSON(parsing: try await api.send(.get, "/v1/items").body)["items"] == .array([]))
    }

    /// Links through the API: `{"ref": ID}` in a body (a unique start resolved), `?links_to=`,
    /// and `/v1/links/broken`.
    @Test func linksThroughTheAPI() async throws {
        let api = try InProcessAPI("routes-links")
        _ = try await api.send(.post, "/v1/items", body: #"{"id":"box-1","fields":{"title":"Box"}}"#)
        _ = try await api.send(.post, "/v1/items", body: #"{"id":"s1","fields":{"title":"Sample"}}"#)
        let patched = try await api.send(.patch, "/v1/items/s1", body: #"{"set":{"in":{"ref":"box"}}}"#)
        #expect(
            try JSON(parsing: patched.body)["fields"]?["in"] == .object([("ref", .string("box-1"))]),
            "\(patched.body)"
        )
        let linking = try JSON(parsing: try await api.send(.get, "/v1/items?links_to=box-1").body)
        #expect(Self.first(linking["items"])?["id"] == .string("s1"), "\(linking)")
        // Combined with a query, as `list --links-to` is (the same host function answers both).
        _ = try await api.send(
            .post,
            "/v1/items",
            body: #"{"id":"s2","fields":{"title":"Other","in":{"ref":"box-1"}}}"#
        )
        let both = try JSON(parsing: try await api.send(.get, "/v1/items?links_to=box-1").body)
        #expect(both["items"].map { if case .array(let items) = $0 { items.count } else { 0 } } == 2, "\(both)")
        let queried = try await api.send(.get, "/v1/items?links_to=box-1&where=title%3DOther&sort=-title")
        #expect(queried.status == .ok, "\(queried.body)")
        let only = try JSON(parsing: queried.body)
        #expect(Self.first(only["items"])?["id"] == .string("s2") && only["next"] == .null, "\(only)")
        let paged = try await api.send(.get, "/v1/items?links_to=box-1&after=s1")
        #expect(paged.status == .badRequest && paged.body.contains("one page"), "\(paged.body)")
        _ = try await api.send(.delete, "/v1/items/s2")
        #expect(try await api.send(.get, "/v1/links/broken").body == "[]")
        _ = try await api.send(.delete, "/v1/items/box-1")
        let broken = try JSON(parsing: try await api.send(.get, "/v1/links/broken").body)
        #expect(Self.first(broken)?["target"] == .string("box-1") && Self.first(broken)?["state"] == .string("deleted"))
        let missing = try await api.send(.patch, "/v1/items/s1", body: #"{"set":{"in":{"ref":"nowhere"}}}"#)
        #expect(missing.status != .ok, "\(missing.body)")
    }

    @Test func mistakesAreProblemDetails() async throws {
        let api = try InProcessAPI("routes-problems")
        let missing = try await api.send(.get, "/v1/items/nothing-here")
        #expect(missing.status == .notFound && missing.headers[.contentType] == "application/problem+json")
        let unknown = try await api.send(.get, "/v1/items?sinec=3")
        #expect(unknown.status == .badRequest && unknown.body.contains("unknown query parameter 'sinec'"))
        let method = try await api.send(.put, "/v1/items")
        #expect(method.status == .methodNotAllowed && method.headers[.allow] == "GET, POST, PATCH, DELETE")
        // Every path the router serves answers another method with 405, read from the router.
        for (path, allow) in [("/v1/session", "DELETE"), ("/v1/items/x1/history", "GET"), ("/v1/login", "POST")] {
            let answer = try await api.send(.trace, path)
            #expect(
                answer.status == .methodNotAllowed && answer.headers[.allow] == allow,
                "\(path): \(answer.status) \(answer.body)"
            )
        }
        let created = try JSON(parsing: try await api.send(.post, "/v1/items", body: #"{"id":"x1","fields":{}}"#).body)
        #expect(created["id"] == .string("x1"))
        let notDeleted = try await api.send(.post, "/v1/items/x1/restore")
        #expect(notDeleted.status == .conflict && !notDeleted.body.contains("lansync "), "\(notDeleted.body)")
        let exists = try await api.send(.post, "/v1/items", body: #"{"id":"x1","fields":{}}"#)
        #expect(
            exists.status == .conflict && !exists.body.contains("'lansync"),
            "no CLI advice over HTTP: \(exists.body)"
        )
        let notJSON = try await api.send(.post, "/v1/items", body: "{")
        #expect(notJSON.status == .badRequest)
        let tooBig = try await api.send(.post, "/v1/items", body: #"{"fields":{"n":123456789012345678901234567890}}"#)
        #expect(tooBig.status == .unprocessableContent, "\(tooBig.body)")
    }

    /// An object as a value is one mistake wherever it is written, and gets one answer: 422 (the
    /// body is well formed; lansync keeps no such value), and the item is untouched.
    @Test func anObjectAsAValueIsTheSameMistakeEverywhere() async throws {
        let api = try InProcessAPI("routes-object-value")
        _ = try await api.send(.post, "/v1/items", body: #"{"id":"o1","fields":{"x":1}}"#)
        let attempts: [(HTTPRequest.Method, String, String)] = [
            (.patch, "/v1/items/o1", #"["x={\"a\":1}"]"#),
            (.patch, "/v1/items/o1", #"{"set":{"x":{"a":1}}}"#),
            (.patch, "/v1/items/o1", #"{"add":{"x":{"a":1}}}"#),
            (.post, "/v1/items", #"{"id":"o2","fields":{"x":{"a":1}}}"#),
            (.post, "/v1/items/batch", #"{"ids":["o1"],"patch":{"set":{"x":{"a":1}}}}"#),
        ]
        for (method, path, body) in attempts {
            let answer = try await api.send(method, path, body: body)
            #expect(
                answer.status == .unprocessableContent && answer.body.contains("object"),
                "\(path) \(body): \(answer.status) \(answer.body)"
            )
        }
        let item = try JSON(parsing: try await api.send(.get, "/v1/items/o1").body)
        #expect(item["fields"]?["x"] == .integer(1), "\(item)")
        #expect(try await api.send(.get, "/v1/items/o2").status == .notFound)
    }

    /// The API runs in the node's process: its edit wakes the node's sessions at once, without
    /// the control socket (no node listens on one here).
    @Test func anEditThroughTheAPITellsTheNodeDirectly() async throws {
        let api = try InProcessAPI("routes-tell")
        let (id, changes) = api.node.watchChanges()
        defer { api.node.stopWatchingChanges(id) }
        #expect(try await api.send(.post, "/v1/items", body: #"{"fields":{"t":1}}"#).status == .created)
        let woke = await withTaskGroup(of: Bool.self) { race in
            race.addTask {
                for await _ in changes { return true }
                return false
            }
            race.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            let first = await race.next() ?? false
            race.cancelAll()
            return first
        }
        #expect(woke, "the node was not told of the API's edit")
    }
}
