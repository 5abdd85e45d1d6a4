import Foundation
import HTTPTypes
import Hummingbird
import LansyncHost
import LansyncJSON
import NIOCore

/// The web page (Docs/UI.md): a client of the `/v1` API like any other, whose files are built
/// into the binary (``UIAssets``) and served at `/` without a token; the data it shows comes
/// from `/v1`, which needs one. `POST /v1/login` trades a one-time code from `lansync ui` for a
/// session (a bearer token of its own), so that a click on the printed link logs the page in;
/// `DELETE /v1/session` ends it ("Log out").
struct WebPage: Sendable {
    let directory: DataDirectory
    /// A folder to serve the page's files from instead of the built-in ones, read on every
    /// request (`LANSYNC_UI_ASSETS`, like Syncthing's `STGUIASSETS`): for working on the page.
    let assetsFolder: String?

    func register(on router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in try asset("index.html") }
        router.get("ui/:file") { _, context in try asset(try context.parameters.require("file")) }
        router.post("v1/login") { request, _ in try await login(request) }
        router.delete("v1/session") { request, _ in try logout(request) }
    }

    /// The headers every file of the page gets: nothing but this origin's own files and API
    /// (no inline script, no other site), never framed, no referrer, revalidated on each load so
    /// that a new binary's page is never mixed with an old cache.
    static let headers: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        .xContentTypeOptions: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-cache",
        HTTPField.Name("X-Frame-Options")!: "DENY",
    ]

    func asset(_ name: String) throws -> Response {
        guard let (type, builtIn) = UIAssets.files[name] else {
            throw Problem(.notFound, "no such file of the page: \(name)")
        }
        var text = builtIn
        if let assetsFolder {
            // Only names the binary has, so the override can't serve any other file.
            guard let fresh = try? String(contentsOfFile: assetsFolder + "/" + name, encoding: .utf8) else {
                throw Problem(.notFound, "LANSYNC_UI_ASSETS=\(assetsFolder) has no file \(name)")
            }
            text = fresh
        }
        var headers = Self.headers
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// `{"code": CODE}` from the link `lansync ui` printed: answers `{"token": TOKEN}` once.
    func login(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 4096)
        // Exactly {"code": CODE}, like every other body the API takes: an unknown key is a mistake.
        guard let text = String(validating: body.readableBytesView, as: UTF8.self),
            case .object(let members)? = try? JSON(parsing: text), members.count == 1,
            case .string(let code) = members[0].value, members[0].key == "code"
        else {
            throw Problem(
                .badRequest,
                #"a login body is {"code": CODE}, with the code from the link 'lansync ui' prints"#
            )
        }
        guard directory.redeemUILoginCode(code) else {
            throw Problem(
                .unauthorized,
                "this login link was used already, has expired, or is not one: run 'lansync ui' for a new link, or log in with the token 'lansync api-token' prints"
            )
        }
        let answer = JSON.object([("token", .string(try directory.startUISession()))]).text
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: answer))
        )
    }

    /// Ends the session the request's bearer token is (the page's "Log out"): it is refused from
    /// then on. The node's own token is no session: rotating it is `lansync api-token --rotate`.
    func logout(_ request: Request) throws -> Response {
        let bearer = request.headers[.authorization].map { String($0.dropFirst(7)) } ?? ""
        guard directory.endUISession(bearer) else {
            throw Problem(
                .badRequest,
                "this is the node's own token, not a page's session: 'lansync api-token --rotate' replaces it"
            )
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"ended":true}"#))
        )
    }

}
