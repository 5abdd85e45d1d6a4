import Synchronization

/// Each path the router serves and the methods it takes, read from the router once every route
/// is on it: what a `405` and its `Allow` say for a path asked with another method (the router
/// itself answers 404 then). Never a list kept by hand beside the routes, which a route added
/// without it made a 404 (`TRACE /metrics`, found by schemathesis).
final class RouteMethods: Sendable {
    private let table = Mutex<[(path: [Substring], methods: [String])]>([])

    /// Takes the router's routes (`/v1/items/{id}`, `GET`: Hummingbird writes a capture in
    /// braces, as OpenAPI does); a later call replaces them.
    func take(_ routes: [(path: String, method: String)]) {
        var byPath: [(path: [Substring], methods: [String])] = []
        for route in routes {
            let path = route.path.split(separator: "/")
            if let i = byPath.firstIndex(where: { $0.path == path }) {
                byPath[i].methods.append(route.method)
            } else {
                byPath.append((path, [route.method]))
            }
        }
        table.withLock { $0 = byPath.map { ($0.path, $0.methods.sorted { Self.rank($0) < Self.rank($1) }) } }
    }

    /// The order a list of methods is read in: reading first, then making, changing, removing.
    static func rank(_ method: String) -> Int {
        ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].firstIndex(of: method) ?? 99
    }

    /// The methods `path` (as requested) takes, or nil if no route has that path. A capture
    /// (`{name}`) takes any one segment.
    func methods(of path: String) -> [String]? {
        let parts = path.split(separator: "/")
        return table.withLock { table in
            table.first { entry in
                entry.path.count == parts.count
                    && zip(entry.path, parts).allSatisfy { ($0.hasPrefix("{") && $0.hasSuffix("}")) || $0 == $1 }
            }?.methods
        }
    }
}
