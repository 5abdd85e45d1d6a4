import Foundation
import Hummingbird
import LansyncHost
import LansyncJSON
import NIOCore

/// The `/v1` endpoints. Shapes follow the CLI: an item is `get --json`'s object, a create body is
/// an `export` line, a patch is the CLI's assignments; lists, conflicts and history are what
/// `list --json`, `conflicts --json` and `history --json` print (Docs/API.md).
///
/// Every read and write goes through the running node's ``LocalReplica`` (as the CLI's do), on
/// the node's thread pool: a handler never blocks the threads that serve requests.
struct Routes: Sendable {
    let node: RunningNode
    /// What the change feed's streams check again while they last.
    let credentials: Credentials

    var replica: LocalReplica { node.replica }

    /// Runs `work`, which reads the replica, on the node's read threads.
    func blocking<T: Sendable>(_ work: @escaping @Sendable (LocalReplica) throws -> T) async throws -> T {
        let replica = self.replica
        return try await node.blocking { try work(replica) }
    }

    /// Runs `work`, which writes the replica, on the node's write thread: a write that waits for
    /// another process's lock (a large `lansync import`) keeps no read waiting.
    func writing<T: Sendable>(_ work: @escaping @Sendable (LocalReplica) throws -> T) async throws -> T {
        let replica = self.replica
        return try await node.writing { try work(replica) }
    }

    func register(on v1: RouterGroup<BasicRequestContext>) {
        v1.get("status") { request, _ in
            try takes(request)
            let sessions = replica.directory.uiSessions()
            return json(try await node.status().jsonText(sessions: sessions))
        }
        v1.get("peers") { request, _ in
            try takes(request)
            return json((try await node.status().jsonValue["peers"] ?? .array([])).text)
        }
        registerItems(on: v1)
        registerViews(on: v1)
    }

    /// The items: reading, creating, editing, deleting and restoring them, and their history.
    private func registerItems(on v1: RouterGroup<BasicRequestContext>) {
        v1.get("items") { request, _ in
            try takes(request, "limit", "deleted", "type", "where", "sort", "after", "links_to", "q")
            return try await listItems(request)
        }
        v1.post("items") { request, _ in
            try takes(request)
            return try await createItem(request)
        }
        v1.patch("items") { request, _ in
            try takes(request, "where", "type")
            return try await bulk(request) { request in
                let (assignments, type) = try Self.patch(try await bytes(of: request))
                if assignments.isEmpty, type == nil { throw Problem(.badRequest, "the patch changes nothing") }
                return .update(assignments, type: type)
            }
        }
        v1.delete("items") { request, _ in
            try takes(request, "where", "type")
            return try await bulk(request) { _ in .delete }
        }
        v1.post("items/batch") { request, _ in
            try takes(request)
            return try await batch(request)
        }
        v1.post("items/restore") { request, _ in
            try takes(request, "where", "type")
            return try await bulk(request) { _ in .restore }
        }
        v1.get("items/:id") { request, context in
            try takes(request)
            return try await item(try resolve(context))
        }
        v1.patch("items/:id") { request, context in
            try takes(request)
            return try await patchItem(request, context)
        }
        v1.delete("items/:id") { request, context in
            try takes(request)
            return try await edit(.delete, try resolve(context))
        }
        v1.post("items/:id/restore") { request, context in
            try takes(request)
            return try await edit(.restore, try resolve(context))
        }
        v1.post("items/:id/resolve") { request, context in
            try takes(request)
            return try await resolveConflict(request, context)
        }
        v1.get("items/:id/history") { request, context in
            try takes(request, "field", "all")
            return try await history(request, context)
        }
    }

    /// What the page and clients read beside the items: counts, broken links, conflicts, the
    /// change feed and this API's own document.
    private func registerViews(on v1: RouterGroup<BasicRequestContext>) {
        v1.get("summary") { request, _ in
            try takes(request)
            let (types, indexed, readOnly) = try await blocking { replica in
                let (types, indexed) = try replica.summary()
                return (types, indexed, try replica.readOnlyReason())
            }
            let typesJSON = types.map { entry in
                JSON.object([
                    ("type", .string(entry.type)), ("items", .integer(Int64(entry.live))),
                    ("deleted", .integer(Int64(entry.deleted))),
                ])
            }
            return json(
                JSON.object([
                    ("items", .integer(Int64(types.reduce(0) { $0 + $1.live }))),
                    ("deleted", .integer(Int64(types.reduce(0) { $0 + $1.deleted }))),
                    ("types", .array(typesJSON)), ("indexed", .array(indexed.map { .string($0.rawValue) })),
                    ("read_only", readOnly.map(JSON.string) ?? .null),
                ]).text
            )
        }
        v1.get("links/broken") { request, _ in
            try takes(request)
            return json(LocalReplica.brokenLinksJSONText(try await blocking { try $0.brokenLinks() }))
        }
        v1.get("conflicts") { request, _ in
            try takes(request)
            let (conflicts, names) = try await blocking { try $0.conflicts() }
            return json(conflicts.jsonText(names: names))
        }
        v1.get("changes") { request, _ in
            try takes(request, "since", "limit", "type", "item", "field", "sync")
            let bearer = credentials.bearer(of: request) ?? []
            return try await ChangeFeed(node: node) { [credentials] in credentials.stillAccepts(bearer) }
                .respond(to: request)
        }
        v1.get("openapi.json") { request, _ in
            try takes(request)
            return json(OpenAPIDocument.text)
        }
    }

    /// A `type` filter: a type an item could have (a wrong one is a mistake, not an empty answer),
    /// except that one the OpenAPI document allows (64 characters) but over 64 bytes is taken and
    /// matches nothing: the document cannot count bytes, and a filter is a question, not an edit.
    static func type(_ text: String) throws -> String {
        try inQuery {
            if text.utf8.count > Limits.maxTypeBytes, text.unicodeScalars.count <= Limits.maxTypeBytes {
                try ItemState.checkSpelling(type: text)
                return text
            }
            try ItemState.validate(type: text)
            return text
        }
    }

    /// A `field` filter: a field name, or `_type` or `_deleted`; like a type, a name within the
    /// document's 128 characters but over 128 bytes matches nothing.
    static func field(_ text: String) throws -> FieldName {
        try inQuery {
            if text.utf8.count > Limits.maxFieldNameBytes, text.unicodeScalars.count <= Limits.maxFieldNameBytes {
                try FieldName.checkSpelling(text)
                return FieldName(unchecked: text)
            }
            return try QueryParser.field(text, in: "field=\(text)")
        }
    }

    /// Bad input in a query string is a 400 whatever it is (a 422 is for a body's content).
    static func inQuery<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let problem as Problem { throw problem } catch {
            throw Problem(.badRequest, Problem.from(error).detail)
        }
    }

    /// Refuses a query parameter the endpoint does not know (a misspelt `sinec=` would otherwise
    /// be ignored, and the answer look right but be wrong).
    func takes(_ request: Request, _ names: String...) throws {
        for (key, _) in try QueryString(request.uri.query).pairs where !names.contains(key) {
            let known = names.isEmpty ? "none" : names.joined(separator: ", ")
            throw Problem(.badRequest, "unknown query parameter '\(key)': this endpoint takes \(known)")
        }
    }

    // MARK: Items

    func resolve(_ context: BasicRequestContext) throws -> ItemID {
        // The whole id, unlike the CLI, which takes a unique start: a program that asks for an
        // item that is not there must hear 404, not act on another item that happens to start
        // with the same letters. The router hands the segment over still percent-encoded.
        let segment = try context.parameters.require("id")
        return try ItemID(segment.removingPercentEncoding ?? segment)
    }

    func item(_ id: ItemID, status: HTTPResponse.Status = .ok) async throws -> Response {
        json(try await blocking { try $0.item(id) }.jsonText, status: status)
    }

    /// `GET /v1/items?links_to=ID`: the live items with a field that links to ID (a unique start
    /// will do) among those the query selects, in one page: `lansync list --links-to`, through
    /// the same host function.
    func linking(
        to typed: String,
        _ query: ItemQuery,
        type: String?,
        search: ItemSearch?,
        limit: Int
    ) async throws -> Response {
        let items = try await blocking { replica in
            try replica.items(
                linkingTo: try replica.resolve(typed),
                try replica.resolvingLinks(query),
                type: type,
                search: search,
                limit: limit
            )
        }
        return json(items.pageJSONText(next: nil))
    }

    /// A page's size (`limit`, 1 to 1000, 100 unless given) and whether it lists deleted items.
    static func pageOptions(_ query: QueryString) throws -> (limit: Int, deleted: Bool) {
        let limit =
            try query["limit"].map { text -> Int in
                guard let n = Int(text), (1...1000).contains(n) else {
                    throw Problem(.badRequest, "limit must be a number from 1 to 1000")
                }
                return n
            } ?? 100
        let deleted =
            try query["deleted"].map { text -> Bool in
                guard text == "true" || text == "false" else {
                    throw Problem(.badRequest, "deleted must be true or false")
                }
                return text == "true"
            } ?? false
        return (limit, deleted)
    }

    func listItems(_ request: Request) async throws -> Response {
        let query = try QueryString(request.uri.query)
        let (limit, deleted) = try Self.pageOptions(query)
        let type = try query["type"].map(Self.type)
        let conditions = query.all("where")
        let sort = query["sort"]
        // An empty search (or only spaces) is no search: the page's box sends what it holds.
        if let q = query["q"], q.unicodeScalars.count > 256 {
            throw Problem(.badRequest, "q (the words to search for) is at most 256 characters: search for fewer words")
        }
        let search = query["q"].flatMap(ItemSearch.init)
        if let target = query["links_to"] {
            guard query["after"] == nil else {
                throw Problem(.badRequest, "links_to answers in one page: it takes no after")
            }
            let itemQuery = ItemQuery(
                filters: try Self.inQuery { try conditions.map(QueryParser.filter) },
                sort: try Self.inQuery { try sort.map(QueryParser.sort) }
            )
            // Every linking item unless a limit is given (as before queries combined with it).
            let most = query["limit"] == nil ? Int.max : limit
            return try await linking(to: target, itemQuery, type: type, search: search, limit: most)
        }
        let page: [Item]
        let next: String?
        if conditions.isEmpty, sort == nil, search == nil {
            let after = try query["after"].map { try ItemID($0) }
            page = try await blocking { try $0.page(type: type, includeDeleted: deleted, after: after, limit: limit) }
            next = page.count == limit ? page.last?.id.rawValue : nil
        } else {
            // A query: `next` is an opaque cursor for `after`, with the same query.
            let itemQuery = ItemQuery(
                filters: try Self.inQuery { try conditions.map(QueryParser.filter) },
                sort: try Self.inQuery { try sort.map(QueryParser.sort) }
            )
            let after = query["after"]
            (page, next) = try await blocking {
                try $0.page(
                    of: try $0.resolvingLinks(itemQuery),
                    type: type,
                    includeDeleted: deleted,
                    search: search,
                    limit: limit,
                    after: after
                )
            }
        }
        return json(page.pageJSONText(next: next))
    }

    func createItem(_ request: Request) async throws -> Response {
        let body = try await bytes(of: request)
        let id = try await writing { try $0.createItem(json: body) }
        var response = try await item(id, status: .created)
        response.headers[.location] = "/v1/items/\(id.rawValue)"
        return response
    }

    /// A patch body: the CLI's assignments (`["title=Climb", "tags+=outdoor"]`), or
    /// `{"set": {...}, "add": {...}, "remove": {...}, "unset": [...], "type": TYPE}` with JSON values
    /// (a list under add or remove adds or removes each element; `unset` removes fields; `type`
    /// changes the item's type in the same edit).
    func patchItem(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try resolve(context)
        let (assignments, type) = try Self.patch(try await bytes(of: request))
        if let type { return try await edit(.retype(type, assignments: assignments), id) }
        // Like an empty JSON merge patch, one that assigns nothing changes nothing.
        if assignments.isEmpty { return try await item(id) }
        return try await edit(.update(assignments), id)
    }

    /// What a patch body asks for: its assignments, and the new type if it names one.
    static func patch(_ body: [UInt8]) throws -> (assignments: [Assignment], type: String?) {
        let json = try Self.parse(body, "the patch", shape: #"a list of assignments or {"set", "add", "remove"}"#)
        var assignments: [Assignment] = []
        var type: String?
        switch json {
        case .array(let list):
            for entry in list {
                guard case .string(let assignment) = entry else {
                    throw Problem(.badRequest, "a patch list holds assignments as strings, like \"title=Climb\"")
                }
                assignments.append(try AssignmentParser.parse(assignment))
            }
        case .object(let members):
            for (key, value) in members {
                if key == "type" {
                    guard case .string(let text) = value else {
                        throw Problem(.badRequest, "\"type\" in the patch is the item's new type, a string")
                    }
                    type = text
                    continue
                }
                if key == "unset" {
                    assignments += try Self.unsets(value)
                    continue
                }
                guard key == "set" || key == "add" || key == "remove", case .object(let fields) = value else {
                    throw Problem(
                        .badRequest,
                        "unknown key '\(key)' in the patch: expected \"set\", \"add\" and \"remove\", each an object of fields, \"unset\" and \"type\""
                    )
                }
                for (name, fieldValue) in fields {
                    let field = try FieldName(name)
                    guard let value = fieldValue.value else {
                        // Well formed, but no value lansync keeps: 422, as in an assignment.
                        throw Problem(
                            .unprocessableContent,
                            "field '\(name)' holds an object; values are null, bool, number, string, list, or a link {\"ref\": ID}"
                        )
                    }
                    switch key {
                    case "set": assignments.append(.set(field, value))
                    default:
                        let elements: [Value]
                        if case .list(let list) = value { elements = list } else { elements = [value] }
                        for element in elements {
                            assignments.append(key == "add" ? .add(field, element) : .remove(field, element))
                        }
                    }
                }
            }
        default:
            throw Problem(.badRequest, "the patch must be a list of assignments or {\"set\", \"add\", \"remove\"}")
        }
        return (assignments, type)
    }

    /// A patch's `unset`: a list of the names of the fields to remove.
    static func unsets(_ value: JSON) throws -> [Assignment] {
        guard case .array(let names) = value else {
            throw Problem(.badRequest, "\"unset\" in the patch is a list of field names to remove")
        }
        return try names.map { name in
            guard case .string(let text) = name else {
                throw Problem(.badRequest, "\"unset\" in the patch is a list of field names to remove")
            }
            return .unset(try FieldName(text))
        }
    }

    /// `POST /v1/items/batch`: `{"ids": [...], "patch": PATCH}` (or `"delete": true`, or
    /// `"restore": true`): the items named, changed in one transaction, all or none (the web
    /// page's edit of the items it shows). `{"changed": N, "ids": [...]}`.
    func batch(_ request: Request) async throws -> Response {
        let body = try await bytes(of: request)
        let shape = #"{"ids": [...], and "patch": {...}, "delete": true or "restore": true}"#
        guard case .object(let members) = try Self.parse(body, "the batch", shape: shape),
            case .array(let list)? = members.first(where: { $0.key == "ids" })?.value, !list.isEmpty,
            list.count <= Self.maxBatch, members.count == 2
        else {
            throw Problem(.badRequest, "a batch is \(shape), with 1 to \(Self.maxBatch) ids")
        }
        var ids: [ItemID] = []
        for entry in list {
            guard case .string(let text) = entry else { throw Problem(.badRequest, "a batch's ids are strings") }
            ids.append(try Self.inQuery { try ItemID(text) })
        }
        let action: LocalReplica.BulkAction
        switch members.first(where: { $0.key != "ids" }).map({ ($0.key, $0.value) }) {
        case ("patch", let patch)?:
            let (assignments, type) = try Self.patch(Array(patch.text.utf8))
            // Like an empty patch of one item, one that assigns nothing changes nothing.
            guard !assignments.isEmpty || type != nil else { return json(LocalReplica.bulkJSONText([])) }
            action = .update(assignments, type: type)
        case ("delete", .bool(true))?: action = .delete
        case ("restore", .bool(true))?: action = .restore
        default: throw Problem(.badRequest, "a batch is \(shape)")
        }
        let chosen = Array(Set(ids)).sorted()
        _ = try await writing { try $0.perform(action, on: chosen) }
        return json(LocalReplica.bulkJSONText(chosen))
    }

    /// The most items one batch names.
    static let maxBatch = 100_000

    /// `PATCH`, `DELETE /v1/items?where=...` and `POST /v1/items/restore?where=...`: `action` on
    /// every item the query selects (of `type`), in one transaction; `{"changed": N, "ids": [...]}`.
    /// A request with no `where` is refused: it would name every item.
    func bulk(
        _ request: Request,
        _ action: @escaping @Sendable (Request) async throws -> LocalReplica.BulkAction
    )
        async throws -> Response
    {
        let query = try QueryString(request.uri.query)
        let conditions = query.all("where")
        guard !conditions.isEmpty else {
            throw Problem(
                .badRequest,
                "name the items with where=CONDITION (as GET /v1/items takes it); a request for every item is refused"
            )
        }
        let type = try query["type"].map(Self.type)
        let itemQuery = ItemQuery(filters: try Self.inQuery { try conditions.map(QueryParser.filter) })
        let chosen = try await action(request)
        let ids = try await writing { replica in
            let ids = try replica.select(try replica.resolvingLinks(itemQuery), type: type, for: chosen)
            try replica.perform(chosen, on: ids)
            return ids
        }
        return json(LocalReplica.bulkJSONText(ids))
    }

    func edit(_ edit: ItemEdit, _ id: ItemID) async throws -> Response {
        _ = try await writing { try $0.edit(edit, on: id) }
        return try await item(id)
    }

    /// `{"field": NAME, "value": VALUE}`: settles a conflict as `lansync resolve` does.
    func resolveConflict(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try resolve(context)
        let body = try await bytes(of: request)
        let json = try Self.parse(body, "a resolve body", shape: #"{"field": NAME, "value": VALUE}"#)
        guard case .object(let members) = json, Set(members.map(\.key)) == ["field", "value"],
            case .string(let name)? = json["field"], let value = json["value"]?.value
        else {
            throw Problem(.badRequest, "a resolve body is {\"field\": NAME, \"value\": VALUE}")
        }
        return try await edit(.resolve(try FieldName(name), value), id)
    }

    func history(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try resolve(context)
        try await blocking { try $0.requireExisting(id) }
        let query = try QueryString(request.uri.query)
        let field = try query["field"].map(Self.field)
        let all =
            try query["all"].map { text -> Bool in
                guard text == "true" || text == "false" else { throw Problem(.badRequest, "all must be true or false") }
                return text == "true"
            } ?? false
        let entries = try await blocking { try $0.history(of: id, field: field) }.filter {
            all || field != nil || !$0.field.isReserved || $0.field == .type
        }
        return json(entries.jsonText)
    }

    /// A request body as JSON: 400 when it is not JSON (or not UTF-8), 422 when it is but holds
    /// an integer past 64 bits (JSON sets no limit; lansync keeps Int64 and doubles apart, and a
    /// double is written 1e20).
    static func parse(_ body: [UInt8], _ what: String, shape: String) throws -> JSON {
        guard let text = String(validating: body, as: UTF8.self) else {
            throw Problem(.badRequest, "\(what) is not UTF-8 text: send \(shape)")
        }
        do {
            return try JSON(parsing: text)
        } catch {
            guard error.isNumberOutOfRange else {
                throw Problem(.badRequest, "\(what) is not JSON (\(error.description)): send \(shape)")
            }
            throw Problem(.unprocessableContent, "\(what) holds an \(error.description)")
        }
    }

    func bytes(of request: Request) async throws -> [UInt8] {
        var buffer = try await request.body.collect(upTo: APIServer.maxBody)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }
}

/// A JSON response.
func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
    Response(
        status: status,
        headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: text))
    )
}
