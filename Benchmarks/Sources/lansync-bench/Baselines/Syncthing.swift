import BenchSQLite
import Foundation
import Glibc

/// Two Syncthing instances on loopback, configured as a user who wants only these two machines
/// would: global discovery, local discovery, relays, NAT traversal, usage reporting, upgrades and
/// the browser launch off; one shared folder.
final class SyncthingPair {
    struct Instance {
        let name: String
        let home: String
        let folder: String
        let listenPort: Int
        let guiPort: Int
        let deviceID: String
    }

    static let apiKey = "lansync-bench"
    let a: Instance
    let b: Instance
    let version: String

    /// `watcherDelay`: seconds Syncthing's file watcher gathers changes before scanning
    /// (its default is 10).
    init(work: String, basePort: Int, watcherDelay: Int) throws {
        version =
            (try run(["syncthing", "serve", "--version"])).split(separator: " ").dropFirst().first.map(String.init)
            ?? "?"
        func make(_ name: String, _ offset: Int) throws -> Instance {
            let home = "\(work)/\(name)"
            try? FileManager.default.removeItem(atPath: home)
            try run(["syncthing", "generate", "--home=\(home)", "--no-default-folder"])
            let id = try run(["syncthing", "serve", "--home=\(home)", "--device-id"]).trimmingCharacters(
                in: .whitespacesAndNewlines
            )
            let folder = "\(work)/\(name)-folder"
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return Instance(
                name: name,
                home: home,
                folder: folder,
                listenPort: basePort + offset,
                guiPort: basePort + 10 + offset,
                deviceID: id
            )
        }
        a = try make("syncthing-a", 0)
        b = try make("syncthing-b", 1)
        for (me, other) in [(a, b), (b, a)] {
            let config = """
                <configuration version="36">
                    <folder id="bench" label="bench" path="\(me.folder)" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="true" fsWatcherDelayS="\(watcherDelay)">
                        <device id="\(me.deviceID)"></device>
                        <device id="\(other.deviceID)"></device>
                    </folder>
                    <device id="\(me.deviceID)" name="\(me.name)"><address>dynamic</address></device>
                    <device id="\(other.deviceID)" name="\(other.name)"><address>tcp://127.0.0.1:\(other.listenPort)</address></device>
                    <gui enabled="true" tls="false"><address>127.0.0.1:\(me.guiPort)</address><apikey>\(Self.apiKey)</apikey></gui>
                    <options>
                        <listenAddress>tcp://127.0.0.1:\(me.listenPort)</listenAddress>
                        <globalAnnounceEnabled>false</globalAnnounceEnabled>
                        <localAnnounceEnabled>false</localAnnounceEnabled>
                        <relaysEnabled>false</relaysEnabled>
                        <natEnabled>false</natEnabled>
                        <startBrowser>false</startBrowser>
                        <urAccepted>-1</urAccepted>
                        <crashReportingEnabled>false</crashReportingEnabled>
                        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                        <setLowPriority>false</setLowPriority>
                    </options>
                </configuration>
                """
            try config.write(toFile: me.home + "/config.xml", atomically: true, encoding: .utf8)
        }
    }

    func start(_ i: Instance) throws -> Child {
        let child = try Child(
            ["syncthing", "serve", "--home=\(i.home)", "--no-browser", "--no-restart", "--no-upgrade"],
            stdout: i.home + ".log",
            stderr: i.home + ".log"
        )
        try waitUntil("Syncthing \(i.name) to answer (see \(i.home).log)", timeout: 60, interval: 0.1) {
            guard child.isRunning else { throw BenchError("Syncthing \(i.name) exited; see \(i.home).log") }
            return (try? api(i, "/rest/system/ping")) != nil
        }
        return child
    }

    /// A GET on the instance's REST API, decoded.
    func api(_ i: Instance, _ path: String) throws -> [String: Any] {
        let text = try run([
            "curl", "-sf", "--max-time", "10", "-H", "X-API-Key: \(Self.apiKey)",
            "http://127.0.0.1:\(i.guiPort)\(path)",
        ])
        guard let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw BenchError("Syncthing \(path): not a JSON object")
        }
        return json
    }

    /// Whether the folder is idle with exactly `files` files and nothing left to pull.
    func idle(_ i: Instance, files: Int) throws -> Bool {
        let s = try api(i, "/rest/db/status?folder=bench")
        return s["state"] as? String == "idle" && s["localFiles"] as? Int == files && s["needFiles"] as? Int == 0
    }

    /// Bytes sent and received on the connection from `i` to its peer.
    func connectionBytes(_ i: Instance, peer: Instance) throws -> (sent: Int, received: Int) {
        let connections = try api(i, "/rest/system/connections")["connections"] as? [String: Any]
        let c = connections?[peer.deviceID] as? [String: Any]
        return (c?["outBytesTotal"] as? Int ?? 0, c?["inBytesTotal"] as? Int ?? 0)
    }

    /// Forgets everything B received: its database and its copy of the folder.
    func resetB() throws {
        for entry in try FileManager.default.contentsOfDirectory(atPath: b.home) where entry.hasPrefix("index-") {
            try FileManager.default.removeItem(atPath: b.home + "/" + entry)
        }
        try FileManager.default.removeItem(atPath: b.folder)
        try FileManager.default.createDirectory(atPath: b.folder, withIntermediateDirectories: true)
    }
}

extension Bench {
    /// W1 and W5 with Syncthing, and the same W1 with lansync at the same size, for the ratios.
    func syncthing() throws {
        guard (try? run(["sh", "-c", "command -v syncthing"])) != nil else {
            report.skipped.append("Syncthing: not installed (scripts/bench.sh installs Debian's syncthing package)")
            return
        }
        let n = settings.syncthingItems
        let data = Dataset(items: n)
        let pair = try SyncthingPair(work: lansync.work, basePort: 22100, watcherDelay: 1)
        report.syncthingVersion = pair.version
        try data.writeFiles(to: pair.a.folder)
        let payload = data.payloadBytes
        section("Syncthing W1: \(n.grouped) items as \(n.grouped) JSON files")

        var seconds: [Double] = []
        var wire: [Double] = []
        var rssA: [Double] = []
        var rssB: [Double] = []
        for r in 0..<settings.runs {
            try pair.resetB()
            let a = try pair.start(pair.a)
            defer { a.stop() }
            try waitUntil("Syncthing A to scan its \(n) files", timeout: 600, interval: 0.2) {
                try pair.idle(pair.a, files: n)
            }
            let start = now()
            let b = try pair.start(pair.b)
            defer { b.stop() }
            try waitUntil("Syncthing B to receive \(n) files", timeout: 3600, interval: 0.25) {
                try pair.idle(pair.b, files: n)
            }
            let elapsed = now() - start
            sleep(seconds: 1)
            let bytes = try pair.connectionBytes(pair.a, peer: pair.b)
            seconds.append(elapsed)
            wire.append(Double(bytes.sent) / Double(payload))
            rssA.append(Double(ProcessStats.peakRSS(a.pid, tree: true)) / 1e6)
            rssB.append(Double(ProcessStats.peakRSS(b.pid, tree: true)) / 1e6)
            print("  run \(r + 1): \(Report.format(elapsed)) s")
        }
        let label = "Syncthing W1, \(n.grouped) files"
        report.add(Figure(label, "wall time, from starting the empty instance", unit: "s", samples: seconds))
        report.add(Figure(label, "wire bytes A→B ÷ payload bytes", unit: "×", samples: wire))
        report.add(Figure(label, "peak RSS, sending instance", unit: "MB", samples: rssA))
        report.add(Figure(label, "peak RSS, receiving instance", unit: "MB", samples: rssB))

        section("Syncthing W5: \(settings.syncthingEdits) edits of one file")
        let a = try pair.start(pair.a)
        defer { a.stop() }
        let b = try pair.start(pair.b)
        defer { b.stop() }
        try waitUntil("Syncthing to settle", timeout: 600, interval: 0.25) {
            try pair.idle(pair.a, files: n) && pair.idle(pair.b, files: n)
        }
        let target = "/edited.json"
        var latencies: [Double] = []
        for e in 0..<settings.syncthingEdits {
            let content = "{\"f5\":\"visible edit \(e)\"}"
            try content.write(toFile: pair.a.folder + target, atomically: false, encoding: .utf8)
            let written = now()
            try waitUntil("Syncthing edit \(e) to reach B", timeout: 120, interval: 0.002) {
                (try? String(contentsOfFile: pair.b.folder + target, encoding: .utf8)) == content
            }
            latencies.append((now() - written) * 1000)
            sleep(seconds: 0.2)
        }
        report.add(
            Figure(
                "Syncthing W5, \(latencies.count) edits",
                "file written on A → same file on B, p50 (spread: p99)",
                unit: "ms",
                samples: latencies,
                percentiles: true,
                note: "fsWatcherDelayS = 1 (Syncthing's default is 10)"
            )
        )
        a.stop()
        b.stop()

        // lansync at the same size, for the ratios.
        section("lansync W1 at Syncthing's size (\(n.grouped) items)")
        let ours = try initialSync(items: n, runs: settings.runs, record: false)
        let oursSeconds = median(ours.map(\.seconds))
        report.add(
            Figure(
                "W1 initial sync, \(n.grouped) items",
                "wall time, from starting the empty node",
                unit: "s",
                samples: ours.map(\.seconds)
            )
        )
        let theirs = median(seconds)
        report.comparisons.append(
            Comparison(
                what: "W1 initial sync of \(n.grouped) items",
                unit: "s",
                lansync: oursSeconds,
                against: "Syncthing",
                other: theirs,
                ratio: oursSeconds / theirs,
                meaning: "below 1: lansync is faster"
            )
        )
        let ourWire = median(ours.map(\.wireToPayload))
        let theirWire = median(wire)
        report.comparisons.append(
            Comparison(
                what: "W1 wire bytes ÷ payload",
                unit: "×",
                lansync: ourWire,
                against: "Syncthing",
                other: theirWire,
                ratio: ourWire / theirWire,
                meaning: "below 1: lansync sends less"
            )
        )
        let ourRSS = median(ours.map { Double($0.targetRSS) / 1e6 })
        let theirRSS = median(rssB)
        report.comparisons.append(
            Comparison(
                what: "W1 peak RSS of the receiver",
                unit: "MB",
                lansync: ourRSS,
                against: "Syncthing",
                other: theirRSS,
                ratio: ourRSS / theirRSS,
                meaning: "below 1: lansync uses less memory"
            )
        )
        if let w5 = report.figures.first(where: { $0.workload.hasPrefix("W5 ") }) {
            let st = Figure("", "", unit: "", samples: latencies, percentiles: true)
            report.comparisons.append(
                Comparison(
                    what: "W5 edit-to-visibility p50",
                    unit: "ms",
                    lansync: w5.median,
                    against: "Syncthing",
                    other: st.median,
                    ratio: w5.median / st.median,
                    meaning: "below 1: lansync shows edits sooner"
                )
            )
            report.comparisons.append(
                Comparison(
                    what: "W5 edit-to-visibility p99",
                    unit: "ms",
                    lansync: w5.p99 ?? .nan,
                    against: "Syncthing",
                    other: st.p99 ?? .nan,
                    ratio: (w5.p99 ?? .nan) / (st.p99 ?? .nan),
                    meaning: "below 1: lansync shows edits sooner"
                )
            )
        }
    }
}
