import Hummingbird
import LansyncHost
import Metrics
import NIOCore
public import Prometheus

extension APIServer {
    /// Makes this process's swift-metrics counters (the node's, the API's) Prometheus metrics,
    /// kept in the registry it returns, which ``MetricsEndpoint`` serves. Once per process,
    /// before the node makes its counters.
    public static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricFamilies.register(in: registry)
        MetricsSystem.bootstrap(DescribedMetricsFactory(registry: registry))
        return registry
    }
}

/// `GET /metrics`: every metric in Prometheus's text format (Docs/OPERATIONS.md, "Metrics"),
/// behind the API's token like everything with data in it. The counters are the node's own; the
/// gauges (items, open conflicts, peers connected, what each peer lacks) are read from the
/// node's status when asked, so they are never stale.
struct MetricsEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    let node: RunningNode

    func register(on router: Router<BasicRequestContext>) {
        router.get("metrics") { _, _ in try await respond() }
    }

    func respond() async throws -> Response {
        let status = try await node.status()
        gauge("items", "Items in the replica, deleted ones not counted.").set(to: Double(status.items))
        gauge("items_deleted", "Deleted items (tombstones) in the replica.").set(to: Double(status.deleted))
        gauge("open_conflicts", "Fields whose concurrent values are not settled yet.").set(to: Double(status.conflicts))
        gauge("peers_connected", "Peers with a session now.").set(to: Double(status.peers.filter(\.connected).count))
        gauge("rejected_changes", "This node's changes the relay refused.").set(to: Double(status.rejected.count))
        if let c = status.collection {
            gauge("collectable_items", "Deleted items not collected yet.").set(to: Double(c.collectableItems))
            gauge("collectable_field_rows", "Field rows of deleted items not collected yet.").set(
                to: Double(c.collectableFields)
            )
            gauge("live_field_rows", "Field rows of live items.").set(to: Double(c.liveFields))
            gauge("collected_items", "Deleted items reduced to their minimal tombstone.").set(
                to: Double(c.collectedItems)
            )
            gauge("purged_items", "Minimal tombstones purged, an away window after their collection.").set(
                to: Double(c.purgedItems)
            )
            gauge("replica_file_bytes", "The replica file's size.").set(to: Double(c.fileBytes))
            gauge("replica_free_bytes", "Free pages in the replica file.").set(to: Double(c.freeBytes))
            gauge(
                "away",
                "1 while this node counts itself away, or its replica put back from a copy is older than the away window: it judges no one away and rejoins from a snapshot."
            ).set(to: c.awaySince == nil ? 0 : 1)
            gauge("members_departed", "Members away or forgotten: they hold collection back no more.").set(
                to: Double(c.departed.count)
            )
        }
        if let view = status.view {
            gauge("view_bounded", "1 once the node keeps a bounded view (past a full mesh, Docs/SCALE.md).").set(
                to: view.mode == "full mesh" ? 0 : 1
            )
            gauge("view_active", "Members in the active view: the sessions the view keeps.").set(
                to: Double(view.active.count)
            )
            gauge("view_passive", "Members known beyond the active view.").set(to: Double(view.passive))
            gauge("view_flood", "Within how many hops of its origin a change goes over every session.").set(
                to: Double(view.flood)
            )
        }
        for peer in status.peers {
            guard let id = peer.nodeID, let lacks = peer.lacks else { continue }
            let labels = [("peer", peer.name ?? ""), ("node", id)]
            gauge("peer_lacks", "Field states of this replica the peer is not known to hold.", labels).set(
                to: Double(lacks)
            )
            gauge("peer_connected", "1 while the peer has a session.", labels).set(to: peer.connected ? 1 : 0)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
        )
    }
}

extension MetricsEndpoint {
    func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Prometheus.Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "lansync", metricName: name, unitName: "", helpText: help),
            labels: labels
        )
    }
}

/// Counts every API request by method and status (`lansync_api_requests_total`).
struct RequestCounter<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            let response = try await next(request, context)
            count(request, response.status.code)
            return response
        } catch let error as any HTTPResponseError {
            count(request, error.status.code)
            throw error
        }
    }

    func count(_ request: Request, _ status: Int) {
        Counter(
            label: "lansync_api_requests_total",
            dimensions: [("method", request.method.rawValue), ("status", String(status))]
        ).increment()
    }
}
