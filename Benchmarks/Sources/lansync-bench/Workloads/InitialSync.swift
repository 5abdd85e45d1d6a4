import BenchSQLite
import Foundation

/// What one W1 run measured.
struct InitialSyncRun {
    var seconds: Double
    var wireToPayload: Double
    var sentBytes: Int
    var backBytes: Int
    var sourceRSS: Int
    var targetRSS: Int
    /// The largest WAL either node's replica had during the sync, in bytes.
    var peakWAL: Int
}

extension Bench {
    /// W1: a replica of `items` items × 10 fields pulled by an empty node. Each run starts the
    /// source's node, then an empty node that dials it, and times from starting the empty node
    /// to both replicas holding the same version vector (then checks their digests agree).
    /// Returns the runs; with `record`, adds the figures to the report (and keeps the synced
    /// pair for W2 and W4).
    @discardableResult
    func initialSync(items: Int, runs: Int, record: Bool) throws -> [InitialSyncRun] {
        let data = Dataset(items: items)
        let label = "W1 initial sync, \(items.grouped) items"
        let source = try lansync.makeReplica("w1-\(items)-a")
        let input = lansync.work + "/w1-\(items).jsonl"
        try data.writeJSONLines(to: input)
        let importStart = now()
        let importRSS = try source.importFileMeasuringMemory(input)
        let importSeconds = now() - importStart
        let fileBytes = try source.fileSizeAfterCheckpoint()
        try? FileManager.default.removeItem(atPath: input)
        let payload = data.payloadBytes

        var results: [InitialSyncRun] = []
        var lastTarget: Replica?
        for r in 0..<runs {
            if let lastTarget { try? FileManager.default.removeItem(atPath: lastTarget.dir) }
            let target = try lansync.makeReplica("w1-\(items)-b\(r)")
            let a = try lansync.start(source)
            let probes = try [ReplicaProbe(source.dir), ReplicaProbe(target.dir)]
            let start = now()
            let wal = FileSizeSampler([source.dir + "/replica.sqlite-wal", target.dir + "/replica.sqlite-wal"])
            let b = try lansync.start(target, peers: [a])
            let seconds = try waitConverged(probes, timeout: 1800, interval: 0.02) - start
            let peakWAL = wal.stop().max() ?? 0
            let counters = try a.settledCounters(with: [target], keys: ["sent_bytes", "received_bytes"])[0]
            let run = InitialSyncRun(
                seconds: seconds,
                wireToPayload: Double(counters["sent_bytes"]!) / Double(payload),
                sentBytes: counters["sent_bytes"]!,
                backBytes: counters["received_bytes"]!,
                sourceRSS: a.peakRSS,
                targetRSS: b.peakRSS,
                peakWAL: peakWAL
            )
            let digests = try (source.digest, target.digest)
            b.stop()
            a.stop()
            guard digests.0 == digests.1 else {
                throw BenchError("\(label): digests differ after sync (\(digests.0) vs \(digests.1))")
            }
            print("  run \(r + 1): \(Report.format(seconds)) s, \(run.sentBytes.grouped) bytes A→B")
            results.append(run)
            lastTarget = target
        }
        if record {
            let fields = Double(data.fieldCount)
            report.add(Figure(label, "import into the source (one transaction)", unit: "s", samples: [importSeconds]))
            report.add(
                Figure(label, "import: field values per second", unit: "fields/s", samples: [fields / importSeconds])
            )
            report.add(Figure(label, "import: peak RSS", unit: "MB", samples: [Double(importRSS) / 1e6]))
            report.add(
                Figure(label, "replica file after import, checkpointed", unit: "MB", samples: [Double(fileBytes) / 1e6])
            )
            report.add(
                Figure(
                    label,
                    "peak WAL of either node during the sync",
                    unit: "MB",
                    samples: results.map { Double($0.peakWAL) / 1e6 }
                )
            )
            report.add(
                Figure(label, "wall time, from starting the empty node", unit: "s", samples: results.map(\.seconds))
            )
            report.add(
                Figure(
                    label,
                    "field changes per second",
                    unit: "fields/s",
                    samples: results.map { fields / $0.seconds }
                )
            )
            report.add(
                Figure(
                    label,
                    "wire bytes A→B ÷ payload bytes",
                    unit: "×",
                    samples: results.map(\.wireToPayload),
                    note:
                        "payload = field names + values, \(payload.grouped) bytes; wire = TLS records on the TCP connection"
                )
            )
            report.add(
                Figure(
                    label,
                    "wire bytes B→A (hello, acks)",
                    unit: "KB",
                    samples: results.map { Double($0.backBytes) / 1000 }
                )
            )
            report.add(
                Figure(label, "peak RSS, sending node", unit: "MB", samples: results.map { Double($0.sourceRSS) / 1e6 })
            )
            report.add(
                Figure(
                    label,
                    "peak RSS, receiving node",
                    unit: "MB",
                    samples: results.map { Double($0.targetRSS) / 1e6 }
                )
            )
            if let lastTarget { bigPair = (source, lastTarget) }
        }
        return results
    }
}
