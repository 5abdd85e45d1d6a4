import BenchSQLite
import Foundation

extension Bench {
    /// W8: the local API (issue 17), with Benchmarks/api-bench.py as its client.
    /// - commit → a Server-Sent Events client of the same node: `lansync set` edits a field, the
    ///   runner takes the commit's moment from the replica file (as in W5), the client the moment
    ///   the event reached it, both on CLOCK_MONOTONIC;
    /// - 100 feed clients at once while 200 items are created over HTTP: events lost or repeated,
    ///   and the node's resident memory;
    /// - a query over `items` items (100,000), a condition on one field, through `/v1/items`, before
    ///   and after `lansync index` on that field: one item by `=`, a hundred by `prefix`.
    func localAPI() throws {
        let script = settings.repo + "/Benchmarks/api-bench.py"
        try sseLatency(script: script)
        try subscribers(script: script)
        try queries(script: script)
    }

    /// A node with its API on `replica`, its base URL and its token.
    private func startWithAPI(_ replica: Replica) throws -> (node: NodeProcess, base: String, token: String) {
        let node = try lansync.start(replica, api: true)
        let base = "http://127.0.0.1:\(node.apiPort!)"
        try waitUntil("\(replica.name)'s API to serve", timeout: 30) {
            ((try? String(contentsOfFile: replica.dir + ".log", encoding: .utf8)) ?? "").contains(
                "local API on \(base)/v1"
            )
        }
        let token = try String(contentsOfFile: replica.dir + "/api-token", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return (node, base, token)
    }

    private func sseLatency(script: String) throws {
        let replica = try smallReplicas.a
        let (node, base, token) = try startWithAPI(replica)
        defer { node.stop() }
        let out = lansync.work + "/w8-follow.txt"
        try? FileManager.default.removeItem(atPath: out)
        let follower = try Child(["python3", script, "follow", base, token, out])
        defer { follower.stop() }
        try waitUntil("the feed client to connect", timeout: 30) {
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").hasPrefix("ready")
        }
        let probe = try ReplicaProbe(replica.dir)
        let nodeID = replica.nodeID
        var latencies: [Double] = []
        var generator = SystemRandomNumberGenerator()
        for e in 0..<settings.visibilityEdits {
            let before = try probe.counter(of: nodeID)
            let value = "sse edit \(e)"
            let edit = try Child([lansync.binary, "set", "--dir", replica.dir, Dataset.id(e), "f6=\(value)"])
            var committed: Double?
            let deadline = now() + 30
            while committed == nil {
                if try probe.counter(of: nodeID) > before { committed = now() }
                if now() > deadline { throw BenchError("W8: edit \(e) was not committed within 30 s") }
                if committed == nil { sleep(seconds: 0.00005) }
            }
            guard edit.wait() == 0 else { throw BenchError("W8: lansync set failed on edit \(e)") }
            var delivered: Double?
            try waitUntil("edit \(e) to reach the feed client", timeout: 30, interval: 0.001) {
                let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                guard let line = text.split(separator: "\n").last(where: { $0.hasSuffix("\"\(value)\"") }) else {
                    return false
                }
                delivered = Double(line.split(separator: " ")[0])
                return true
            }
            latencies.append((delivered! - committed!) * 1000)
            sleep(seconds: Double.random(in: 0.01...0.03, using: &generator))
        }
        report.add(
            Figure(
                "W8 local API, \(latencies.count) edits",
                "commit → event at an SSE client of the same node, p50 (spread: p99)",
                unit: "ms",
                samples: latencies,
                percentiles: true,
                note: "commit seen by polling the replica file every ~50 µs; arrival stamped by the client"
            )
        )
    }

    private func subscribers(script: String) throws {
        let clients = 100
        let edits = 200
        let replica = try smallReplicas.a
        let (node, base, token) = try startWithAPI(replica)
        defer { node.stop() }
        let out = lansync.work + "/w8-subscribers.json"
        try? FileManager.default.removeItem(atPath: out)
        let run = try Child(
            ["python3", script, "subscribers", base, token, String(clients), String(edits), String(node.child.pid)],
            stdout: out
        )
        guard run.wait() == 0 else { throw BenchError("W8: the subscribers' client failed") }
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        guard let result = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw BenchError("W8: the subscribers' client printed no JSON")
        }
        func number(_ key: String) -> Double { (result[key] as? NSNumber)?.doubleValue ?? .nan }
        let label = "W8 local API, \(clients) feed clients, \(edits) items created over HTTP"
        report.add(Figure(label, "events lost, all clients", unit: "events", samples: [number("lost")]))
        report.add(Figure(label, "events repeated, all clients", unit: "events", samples: [number("repeated")]))
        report.add(Figure(label, "node RSS before the clients", unit: "MB", samples: [number("rss_before_mb")]))
        report.add(Figure(label, "node RSS, highest sampled", unit: "MB", samples: [number("rss_peak_mb")]))
        report.add(Figure(label, "until every client had every event", unit: "s", samples: [number("seconds")]))
    }

    private func queries(script: String) throws {
        let replica = try lansync.makeReplica("w8-query")
        let input = lansync.work + "/w8-query.jsonl"
        try Dataset(items: settings.items).writeJSONLines(to: input)
        try replica.importFile(input)
        let (node, base, token) = try startWithAPI(replica)
        defer { node.stop() }
        let middle = settings.items / 2
        let one = "f3=" + Dataset.fields(middle)[3].1
        let hundred = "f3 prefix value 3 of item " + String(String(format: "%07d", middle).dropLast(2))
        let label = "W8 local API, a query over \(settings.items.grouped) items"
        func time(_ condition: String, _ metric: String) throws {
            let out = lansync.work + "/w8-query.json"
            try? FileManager.default.removeItem(atPath: out)
            let run = try Child(["python3", script, "query", base, token, "21", condition], stdout: out)
            guard run.wait() == 0 else { throw BenchError("W8: the query client failed on \(condition)") }
            let data = try Data(contentsOf: URL(fileURLWithPath: out))
            guard let result = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let times = result["ms"] as? [Double], let found = result["found"] as? Int
            else { throw BenchError("W8: the query client printed no JSON") }
            // The first request also opens the connection and warms the page cache: left out.
            report.add(Figure(label, "\(metric) (\(found) found)", unit: "ms", samples: Array(times.dropFirst())))
        }
        try time(one, "f3 = a value, unindexed")
        try time(hundred, "f3 prefix, unindexed")
        _ = try lansync.cli(["index", "--dir", replica.dir, "f3"])
        try time(one, "f3 = a value, indexed")
        try time(hundred, "f3 prefix, indexed")
    }
}
