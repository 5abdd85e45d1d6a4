public import LansyncHost

extension APIServer {
    /// The local API as a service beside a running node (``DataDirectory/runNode(_:logger:alongside:)``):
    /// served at `address`, else at 127.0.0.1 on the port after `listen`'s. At the default
    /// address a taken port only costs the API (a log line says so); at an explicit one it stops
    /// the node.
    public static func nodeService(
        at address: PeerAddress?,
        listen: PeerAddress,
        directory: DataDirectory,
        logger: Logger
    ) throws -> DataDirectory.NodeService {
        let chosen =
            address
            ?? PeerAddress(host: "127.0.0.1", port: listen.port == 0 || listen.port == 65_535 ? 0 : listen.port + 1)
        let server = try APIServer(
            host: chosen.host,
            port: chosen.port,
            directory: directory,
            metrics: bootstrapMetrics()
        )
        let explicit = address != nil
        return { node in
            do {
                try await server.run(node: node) { bound in
                    node.announceAPI(bound)
                    logger.notice(
                        "local API on http://\(bound)/v1, the web page on http://\(bound)/ ('lansync ui' prints a link that logs in)"
                    )
                }
            } catch  where !explicit {
                // The default address is taken (another node on this machine, say): the node
                // runs on without an API rather than not at all.
                logger.warning("no local API: \(error)")
            }
        }
    }
}
