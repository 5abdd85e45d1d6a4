import Metrics
import Prometheus

/// swift-metrics' factory for this process, over Prometheus: every family a counter or meter
/// makes gets its `# HELP` line from ``MetricFamilies``, which Prometheus' own factory cannot give
/// (it registers every family with an empty help). One help text a family, always the same,
/// because the registry stops the process on two different texts for one name.
struct DescribedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let plain: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        plain = PrometheusMetricsFactory(registry: registry)
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: MetricFamilies.descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: MetricFamilies.descriptor(label), labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: MetricFamilies.descriptor(label), labels: dimensions)
    }

    // Neither is used by lansync; a library's would get Prometheus' defaults, without help.
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        plain.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        plain.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        plain.destroyFloatingPointCounter(handler)
    }
    func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}

/// The families the node's counters make (Docs/OPERATIONS.md, "Metrics"), with their help, and
/// the series each labelled one has from the start: a documented family is in `/metrics` at zero
/// before anything happened (a discovery event with mDNS off, a refusal never met), so a query
/// or an alert over it never sees "no data".
enum MetricFamilies {
    static let counters: [(name: String, help: String, series: [[(String, String)]])] = [
        ("lansync_sessions_started_total", "Sessions that passed their hello.", [[]]),
        (
            "lansync_sessions_ended_total", "Sessions ended, cleanly or with an error.",
            [[("result", "clean")], [("result", "error")]]
        ),
        ("lansync_sent_bytes_total", "Bytes sent in sessions, TLS included.", [[]]),
        ("lansync_received_bytes_total", "Bytes received in sessions, TLS included.", [[]]),
        ("lansync_field_states_sent_total", "Field states sent to peers.", [[]]),
        ("lansync_field_states_received_total", "Field states received from peers.", [[]]),
        ("lansync_field_states_applied_total", "Received field states that changed the replica.", [[]]),
        ("lansync_merges_total", "Batches from peers merged into the replica, one transaction each.", [[]]),
        (
            "lansync_delta_reads_total",
            "Deltas' opening reads: read by the session (own), or shared with another session whose peer stood at the same point (shared).",
            [[("read", "own")], [("read", "shared")]]
        ),
        (
            "lansync_connections_refused_total", "Connections refused before a session, by reason.",
            ["wrong-cluster", "revoked", "busy", "handshake"].map { [("reason", $0)] }
        ),
        (
            "lansync_discovery_events_total",
            "mDNS discovery events: peers found and lost, the daemon available or not.",
            ["found", "lost", "available", "unavailable"].map { [("event", $0)] }
        ),
        ("lansync_api_requests_total", "Local API requests, by method and answer status.", []),
    ]

    static let meters: [(name: String, help: String)] = [
        ("lansync_sessions_active", "Sessions now.")
    ]

    /// A family's whole name and its help ("" for one lansync does not make).
    static func descriptor(_ name: String) -> MetricNameDescriptor {
        let help = counters.first { $0.name == name }?.help ?? meters.first { $0.name == name }?.help ?? ""
        return MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// Makes every documented series, at zero.
    static func register(in registry: PrometheusCollectorRegistry) {
        for family in counters {
            for labels in family.series {
                _ = registry.makeCounter(descriptor: descriptor(family.name), labels: labels)
            }
        }
        for meter in meters { _ = registry.makeGauge(descriptor: descriptor(meter.name), labels: []) }
    }
}
