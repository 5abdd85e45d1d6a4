import Foundation
import Hummingbird
public import LansyncHost
import Logging
import NIOCore
public import Prometheus

/// The local HTTP API a running node serves (Docs/API.md): items, conflicts, history, status and
/// peers under `/v1`, and the change feed, as JSON or Server-Sent Events. Every request needs the
/// data directory's bearer token. Every write goes through the same path as the CLI's (one
/// transaction, then the node pushes it), so it merges and syncs like a CLI edit. Errors are
/// problem details with the CLI's words.
public struct APIServer: Sendable {
    public let host: String
    public let port: Int
    let directory: DataDirectory
    /// The bearer token, read again when `lansync api-token --rotate` replaces it.
    let token: APITokenFile
    /// Where `/metrics` reads from (nil: no metrics endpoint).
    let metrics: PrometheusCollectorRegistry?

    /// The largest request body taken (a field value is at most 1 MiB).
    static let maxBody = 4 << 20

    public init(
        host: String,
        port: Int,
        directory: DataDirectory,
        metrics: PrometheusCollectorRegistry? = nil
    ) throws {
        self.host = host
        self.port = port
        self.directory = directory
        self.token = try APITokenFile(directory: directory)
        self.metrics = metrics
    }

    /// Serves until the calling task is cancelled; `ready` gets the address it listens on.
    public func run(node: RunningNode, ready: @escaping @Sendable (String) async -> Void) async throws {
        let router = router(serving: node)
        var logger = Logger(label: "lansync-api")
        logger.logLevel = .critical
        let host = self.host
        let app = Application(
            router: router,
            // A connection that sends nothing for 30 s while no answer is under way is closed:
            // half a request can't hold a connection for ever. A feed stream is an answer under
            // way, so its quiet client stays.
            server: .http1(configuration: .init(idleTimeout: .seconds(30))),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port)),
            onServerRunning: { channel in
                await ready("\(host):\(channel.localAddress?.port ?? 0)")
            },
            logger: logger
        )
        do {
            try await app.run()
        } catch is CancellationError {
        } catch {
            throw HostError(
                "the API cannot serve on \(host):\(port) (\(HostError.describing(error))): choose another address with --api HOST:PORT, or run without it (--no-api)"
            )
        }
    }

    /// Every endpoint, behind the token check and the problem-details middleware: what the
    /// server answers with (and what the in-process tests drive).
    func router(serving node: RunningNode) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        // Outermost, so that it counts each request with the status its problem answered.
        router.add(middleware: RequestCounter())
        let methods = RouteMethods()
        router.add(middleware: ProblemMiddleware(routes: methods))
        let credentials = Credentials(token: token, directory: directory)
        router.add(middleware: TokenCheck(credentials: credentials))
        Routes(node: node, credentials: credentials).register(on: router.group("v1"))
        WebPage(
            directory: directory,
            assetsFolder: ProcessInfo.processInfo.environment["LANSYNC_UI_ASSETS"]
        ).register(on: router)
        if let metrics { MetricsEndpoint(registry: metrics, node: node).register(on: router) }
        // Every route is on the router now: what a 405 says each path takes comes from it.
        methods.take(router.routes.map { ($0.path.description, $0.method.rawValue) })
        return router
    }
}
