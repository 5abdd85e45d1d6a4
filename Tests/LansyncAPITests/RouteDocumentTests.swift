import Foundation
import Hummingbird
import Prometheus
import Testing

@testable import LansyncAPI
@testable import LansyncHost

/// The served OpenAPI document (`/v1/openapi.json`) against the router itself: every route the
/// server answers is documented, with its method, and every documented operation is served. A
/// route added without its document, or a document left behind by a removed route, fails here.
@Suite struct RouteDocumentTests {
    /// The page's files (HTML, script, style, for a browser) are the only routes the document
    /// leaves out: they are not the API.
    static let pageRoutes: Set<String> = ["GET /", "GET /ui/{file}"]

    /// The routes a node with metrics serves, as its router holds them.
    static func routes() throws -> [Router<BasicRequestContext>.RouteDescription] {
        let api = try InProcessAPI("route-document")
        let server = try APIServer(
            host: "127.0.0.1",
            port: 0,
            directory: api.directory,
            metrics: PrometheusCollectorRegistry()
        )
        return server.router(serving: api.node).routes
    }

    /// Every `METHOD /path` the router answers (Hummingbird writes a capture as OpenAPI does,
    /// `{id}`).
    static func served() throws -> Set<String> {
        Set(try routes().map { "\($0.method.rawValue) \($0.path.description)" })
    }

    /// Every `METHOD /path` of the document's operations.
    static func documented() throws -> Set<String> {
        // Foundation's parser: the document holds integers past Int64 (bounds in its schemas),
        // which lansync's own parser refuses, as it should for a value.
        let document = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.text.utf8)) as? [String: Any]
        guard let paths = document?["paths"] as? [String: Any] else { throw DocumentError("the document has no paths") }
        var operations: Set<String> = []
        for (path, item) in paths {
            for method in (item as? [String: Any])?.keys ?? [:].keys
            where ["get", "put", "post", "delete", "patch", "head", "options"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    struct DocumentError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// What a 405 says a path takes is read from the router: every route, `/metrics` and the
    /// page's included, is known with its methods.
    @Test func everyRouteAnswersAnotherMethodWithItsOwn() throws {
        let routes = try Self.routes()
        let methods = RouteMethods()
        methods.take(routes.map { ($0.path.description, $0.method.rawValue) })
        let byPath = Dictionary(grouping: routes, by: { $0.path.description })
        #expect(byPath.count >= 18 && byPath["/metrics"] != nil, "\(byPath.keys.sorted())")
        for (path, routes) in byPath {
            let concrete =
                "/" + path.split(separator: "/").map { $0.hasPrefix(":") ? "x1" : String($0) }.joined(separator: "/")
            #expect(
                methods.methods(of: concrete)
                    == routes.map(\.method.rawValue).sorted { RouteMethods.rank($0) < RouteMethods.rank($1) },
                "\(concrete)"
            )
        }
        #expect(methods.methods(of: "/v1/nothing") == nil && methods.methods(of: "/v1/items/x1/nothing") == nil)
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationServed() throws {
        let served = try Self.served()
        let documented = try Self.documented()
        // The router holds what the test expects it to: not an empty list that passes anything.
        #expect(served.contains("GET /v1/items") && served.contains("DELETE /v1/session"), "\(served.sorted())")
        #expect(Self.pageRoutes.isSubset(of: served), "\(served.sorted())")
        let undocumented = served.subtracting(documented).subtracting(Self.pageRoutes)
        #expect(undocumented.isEmpty, "served but not in openapi.json: \(undocumented.sorted())")
        let unserved = documented.subtracting(served)
        #expect(unserved.isEmpty, "in openapi.json but not served: \(unserved.sorted())")
    }
}
