import Foundation
import Hummingbird
import LansyncHost
import LansyncJSON
import NIOCore

/// A failure the API answers with: RFC 9457 problem details (`application/problem+json`), whose
/// `detail` is the sentence the CLI prints for the same failure. Nothing was changed.
struct Problem: HTTPResponseError {
    let status: HTTPResponse.Status
    let detail: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ detail: String, headers: HTTPFields = [:]) {
        self.status = status
        self.detail = detail
        self.headers = headers
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = JSON.object([
            ("type", .string("about:blank")),
            ("title", .string(status.reasonPhrase)),
            ("status", .integer(Int64(status.code))),
            ("detail", .string(detail)),
        ]).text
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// The problem for an error from the layers below, in their own words.
    static func from(_ error: any Error) -> Problem {
        switch error {
        case let problem as Problem: return problem
        case let coded as any CodedError: return Problem(status(of: coded.code), coded.description)
        case is NIOTooManyBytesError:
            return Problem(.contentTooLarge, "the request body is over \(APIServer.maxBody) bytes: send less at once")
        case let http as HTTPError:
            switch http.status {
            case .notFound:
                return Problem(.notFound, "no such endpoint: Docs/API.md lists them (all under /v1)")
            case .contentTooLarge:
                return Problem(
                    .contentTooLarge,
                    "the request body is over \(APIServer.maxBody) bytes: send less at once"
                )
            case .methodNotAllowed:
                return Problem(.methodNotAllowed, "this endpoint does not take that method: Docs/API.md lists them")
            default: return Problem(http.status, http.body ?? http.status.reasonPhrase)
            }
        default: return Problem(.internalServerError, "\(error)")
        }
    }

    /// The HTTP status of each kind of failure (Docs/API.md, "Errors").
    static func status(of code: ErrorCode) -> HTTPResponse.Status {
        switch code {
        case .badInput: .badRequest
        case .overLimit: .unprocessableContent
        case .notFound: .notFound
        case .conflict: .conflict
        case .gone: .gone
        case .readOnly: .forbidden
        case .damaged, .unavailable: .serviceUnavailable
        default: .internalServerError
        }
    }
}

struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    /// What each path takes, read from the router itself.
    let routes: RouteMethods

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // The router answers 404 for a known path asked with a method it does not take.
            if let methods = routes.methods(of: request.uri.path) {
                throw Problem(
                    .methodNotAllowed,
                    "\(request.method) is not taken here: \(request.uri.path) takes \(methods.joined(separator: ", "))",
                    headers: [.allow: methods.joined(separator: ", ")]
                )
            }
            throw Problem.from(error)
        } catch {
            throw Problem.from(error)
        }
    }
}

/// The bearer token check: without `Authorization: Bearer TOKEN` (the data directory's
/// `api-token`, as it is now, or a web page's session that has not logged out), 401 and nothing
/// else, for every path but the web page's own files and its login (which hold no data, and are
/// served to anyone who can connect).
struct TokenCheck<Context: RequestContext>: RouterMiddleware {
    let credentials: Credentials

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        guard Self.needsToken(request.uri.path) else { return try await next(request, context) }
        guard credentials.accept(request) else {
            throw Problem(
                .unauthorized,
                "a bearer token is needed: send 'Authorization: Bearer TOKEN', where 'lansync api-token' prints TOKEN",
                headers: [.wwwAuthenticate: #"Bearer realm="lansync""#]
            )
        }
        return try await next(request, context)
    }

    /// Whether a request for `path` must carry the token: everything but the page's files and
    /// the login. An allow-list, so that no spelling of a data path (`//v1/items`, `/v1/./items`)
    /// can slip past the check.
    static func needsToken(_ path: String) -> Bool {
        if path == "/" || path == "/v1/login" { return false }
        guard path.hasPrefix("/ui/") else { return true }
        let name = path.utf8.dropFirst(4)
        return name.isEmpty || name.first == UInt8(ascii: ".")
            || !name.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

}

extension UInt8 {
    var isASCIIAlphanumeric: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5a).contains(self) || (0x61...0x7a).contains(self)
    }
}
