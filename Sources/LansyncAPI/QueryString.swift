import Foundation
import HTTPTypes

/// A request's query string read the way HTML forms and common clients write it
/// (`application/x-www-form-urlencoded`): `+` is a space and `%XX` a byte, in names and values
/// alike. Hummingbird's own reading keeps `+` and leaves names encoded, so
/// `where=title+prefix+Fix`, which Python's `urlencode` and browsers send, would not be the
/// condition it spells. A literal `+` travels as `%2B`.
struct QueryString: Sendable {
    let pairs: [(name: String, value: String)]

    init(_ query: String?) throws {
        pairs = try (query ?? "").split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) throws -> String {
                guard let decoded = text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw Problem(
                        .badRequest,
                        "the query string has a bad escape in '\(text.prefix(40))': write a byte as %XX, a space as + or %20"
                    )
                }
                return decoded
            }
            return (try decode(parts[0]), try decode(parts.count > 1 ? parts[1] : ""))
        }
    }

    /// The first value given for `name`.
    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }

    /// Every value given for `name`, in order (`where=a&where=b`).
    func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }
}
