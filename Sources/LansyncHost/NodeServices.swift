import LansyncNode
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import UnixSignals

/// A running node and what runs beside it (the local API), as one swift-service-lifecycle
/// `ServiceGroup`: SIGTERM and SIGINT shut it down gracefully (each service stops as if
/// cancelled); the node ending ends the group; a service beside it that fails stops the node,
/// and one that returns leaves the node running without it. A service beside the node starts
/// once the node listens, so that a port the node needs is never the service's first (a taken
/// port is then reported for what it is).
enum NodeServices {
    static func group(
        _ running: RunningNode,
        alongside services: [DataDirectory.NodeService],
        logger: Logger
    ) -> ServiceGroup {
        group(running.node, alongside: services.map { service in { try await service(running) } }, logger: logger)
    }

    /// The group of `node` and `services` (each already given what it serves).
    static func group(
        _ node: Node,
        alongside services: [@Sendable () async throws -> Void],
        logger: Logger
    ) -> ServiceGroup {
        let listening = Listening()
        var configurations = [
            ServiceGroupConfiguration.ServiceConfiguration(
                service: TheNode(node: node, listening: listening),
                successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .cancelGroup,
                serviceName: "node"
            )
        ]
        for (index, service) in services.enumerated() {
            configurations.append(
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: BesideTheNode(listening: listening, body: service),
                    successTerminationBehavior: .ignore,
                    failureTerminationBehavior: .cancelGroup,
                    serviceName: "beside the node \(index + 1)"
                )
            )
        }
        return ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: configurations,
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
    }

    /// The node: runs until the group shuts down.
    struct TheNode: Service {
        let node: Node
        let listening: Listening

        func run() async throws {
            do {
                try await cancelWhenGracefulShutdown {
                    try await node.run { _ in listening.arrived() }
                }
            } catch is CancellationError {
                // Shut down on purpose (a signal): a clean stop.
            }
        }
    }

    /// A service beside the node, started once the node listens.
    struct BesideTheNode: Service {
        let listening: Listening
        let body: @Sendable () async throws -> Void

        func run() async throws {
            try await cancelWhenGracefulShutdown {
                await listening.wait()
                guard !Task.isCancelled else { return }
                try await body()
            }
        }
    }

    /// The moment the node listens, which the services beside it wait for (a wait ends early
    /// when its task is cancelled: a node that fails to start takes its services down with it).
    final class Listening: Sendable {
        private let state = NIOLockedValueBox<(done: Bool, waiting: [AsyncStream<Void>.Continuation])>((false, []))

        func arrived() {
            let waiting = state.withLockedValue { state -> [AsyncStream<Void>.Continuation] in
                state.done = true
                defer { state.waiting = [] }
                return state.waiting
            }
            waiting.forEach { $0.finish() }
        }

        func wait() async {
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            let done = state.withLockedValue { state -> Bool in
                if !state.done { state.waiting.append(continuation) }
                return state.done
            }
            if done { return }
            // Ends when the node listens, or at once when this task is cancelled.
            for await _ in stream {}
        }
    }
}
