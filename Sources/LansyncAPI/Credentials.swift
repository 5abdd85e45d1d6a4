import HTTPTypes
import Hummingbird
import LansyncHost

/// What the API accepts as a credential: the data directory's bearer token (``APITokenFile``,
/// read again when `lansync api-token --rotate` replaces it) or a session the page logged in
/// with (``DataDirectory/isUISession(_:now:)``, until its logout).
///
/// A request is checked once, as it starts; an answer that lasts (the change feed's event
/// stream) asks ``stillAccepts(_:)`` again at least every ``recheck``, and ends once its
/// credential is rotated away or logged out: access ends when it ends (Docs/SECURITY.md).
struct Credentials: Sendable {
    let token: APITokenFile
    let directory: DataDirectory

    /// How often a lasting answer looks at its credential again.
    static let recheck: Duration = .milliseconds(250)

    /// Whether `request` carries a credential accepted now.
    func accept(_ request: Request) -> Bool {
        bearer(of: request).map(stillAccepts) ?? false
    }

    /// The token of `request`'s `Authorization: Bearer` header, if it has one.
    func bearer(of request: Request) -> [UInt8]? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return Array(header.utf8.dropFirst(7))
    }

    /// Whether `bearer` is the API token or a page session now.
    func stillAccepts(_ bearer: [UInt8]) -> Bool {
        Self.equal(bearer, token.current) || directory.isUISession(bearer)
    }

    /// Compares in time that does not depend on where the first difference is.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
