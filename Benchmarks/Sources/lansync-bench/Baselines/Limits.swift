import BenchSQLite
import Foundation
import Glibc

extension Bench {
    /// The physical limits lansync is held against, measured in the same run on this machine:
    /// the same rows in a plain SQLite table with the same durability lansync asks for (WAL,
    /// synchronous=FULL) written in batched transactions, and raw TCP throughput over loopback.
    func limits() throws {
        let rowsW1 = settings.items * Dataset.fieldsPerItem
        var insertRates: [Double] = []
        var updateRates: [Double] = []
        var fileSizes: [Double] = []
        var commits: [Double] = []
        for r in 0..<settings.runs {
            let path = lansync.work + "/limit-\(r).sqlite"
            defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
            let db = try SQLite(path)
            try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
            try db.execute(
                "CREATE TABLE field (item TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (item, name)) WITHOUT ROWID"
            )
            let batch = 1000
            var start = now()
            var written = 0
            try db.execute("BEGIN")
            for i in 0..<settings.items {
                let id = Dataset.id(i)
                for (name, value) in Dataset.fields(i) {
                    try db.query("INSERT INTO field VALUES (?, ?, ?)", [.text(id), .text(name), .text(value)])
                    written += 1
                    if written % batch == 0 { try db.execute("COMMIT; BEGIN") }
                }
            }
            try db.execute("COMMIT")
            insertRates.append(Double(rowsW1) / (now() - start))
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            fileSizes.append(
                Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) / 1e6
            )

            let n = settings.conflicts
            start = now()
            try db.execute("BEGIN")
            for e in 0..<n {
                let id = Dataset.id(e * settings.smallItems / n)
                try db.query(
                    "UPDATE field SET value = ? WHERE item = ? AND name = 'f0'",
                    [.text("conflicting edit \(e) of \(id)"), .text(id)]
                )
                if (e + 1) % batch == 0 { try db.execute("COMMIT; BEGIN") }
            }
            try db.execute("COMMIT")
            updateRates.append(Double(n) / (now() - start))

            // One small commit as a peer's batch commits on the receiver (W5's other end).
            try db.execute("PRAGMA synchronous=NORMAL")
            for e in 0..<1000 {
                let id = Dataset.id(e)
                let t = now()
                try db.query(
                    "UPDATE field SET value = ? WHERE item = ? AND name = 'f1'",
                    [.text("commit \(e)"), .text(id)]
                )
                commits.append((now() - t) * 1000)
            }
        }
        let label = "Limit: plain SQLite table (WAL, synchronous=FULL, 1,000 rows a transaction)"
        report.add(
            Figure(
                label,
                "insert W1's \(rowsW1.grouped) (item, field, value) rows",
                unit: "rows/s",
                samples: insertRates
            )
        )
        report.add(
            Figure(label, "update W3's \(settings.conflicts.grouped) rows", unit: "rows/s", samples: updateRates)
        )
        report.add(Figure(label, "file holding W1's rows, checkpointed", unit: "MB", samples: fileSizes))
        report.add(
            Figure(label, "one row updated and committed, synchronous=NORMAL", unit: "ms", samples: commits)
        )

        var throughput: [Double] = []
        for _ in 0..<settings.runs { throughput.append(try loopbackThroughput(bytes: 2 << 30)) }
        report.add(
            Figure("Limit: raw TCP over loopback", "one connection, 256 KiB writes", unit: "MB/s", samples: throughput)
        )
        let roundTrips = try loopbackRoundTrips(10_000)
        report.add(Figure("Limit: raw TCP over loopback", "one byte there and back", unit: "ms", samples: roundTrips))
        compareLatencyAndCommands(floor: median(commits) + median(roundTrips))

        let sqliteInsert = median(insertRates)
        let w1Label = "W1 initial sync, \(settings.items.grouped) items"
        if let imported = report.figure(w1Label, "import: field values per second") {
            report.comparisons.append(
                Comparison(
                    what: "import field values per second",
                    unit: "fields/s",
                    lansync: imported.median,
                    against: "plain SQLite inserts",
                    other: sqliteInsert,
                    ratio: imported.median / sqliteInsert,
                    meaning: "the fraction of the storage limit import reaches (target ≥ 0.6)"
                )
            )
        }
        if let file = report.figure(w1Label, "replica file after import, checkpointed") {
            let plain = median(fileSizes)
            report.comparisons.append(
                Comparison(
                    what: "replica file of W1's rows",
                    unit: "MB",
                    lansync: file.median,
                    against: "the plain table",
                    other: plain,
                    ratio: file.median / plain,
                    meaning: "how much larger the replica is (target ≤ 1.3)"
                )
            )
        }
        if let w1 = report.figure("W1 initial sync, \(settings.items.grouped) items", "field changes per second") {
            report.comparisons.append(
                Comparison(
                    what: "W1 field changes per second",
                    unit: "fields/s",
                    lansync: w1.median,
                    against: "plain SQLite inserts",
                    other: sqliteInsert,
                    ratio: w1.median / sqliteInsert,
                    meaning: "the fraction of the storage limit lansync reaches end to end (target ≥ 0.5)"
                )
            )
            if let wire = report.figure(
                "W1 initial sync, \(settings.items.grouped) items",
                "wire bytes A→B ÷ payload bytes"
            ),
                let time = report.figure(
                    "W1 initial sync, \(settings.items.grouped) items",
                    "wall time, from starting the empty node"
                )
            {
                let ours = wire.median * Double(Dataset(items: settings.items).payloadBytes) / time.median / 1e6
                let tcp = median(throughput)
                report.comparisons.append(
                    Comparison(
                        what: "W1 bytes on the wire per second",
                        unit: "MB/s",
                        lansync: ours,
                        against: "raw loopback TCP",
                        other: tcp,
                        ratio: ours / tcp,
                        meaning: "the fraction of the network limit lansync uses"
                    )
                )
            }
        }
        if let w3 = report.figure(
            "W3 conflicts, \(settings.conflicts.grouped) fields edited on both sides",
            "merges per second (each node merges every field)"
        ) {
            let sqliteUpdate = median(updateRates)
            report.comparisons.append(
                Comparison(
                    what: "W3 merges per second",
                    unit: "fields/s",
                    lansync: w3.median,
                    against: "plain SQLite updates",
                    other: sqliteUpdate,
                    ratio: w3.median / sqliteUpdate,
                    meaning: "the fraction of the storage limit lansync reaches end to end (target ≥ 0.3)"
                )
            )
        }
    }

    /// W5 beside what an edit must cost at least (the receiver's commit and one loopback round
    /// trip), and the CLI's commands beside the `sqlite3` shell running one statement.
    private func compareLatencyAndCommands(floor: Double) {
        let w5 = report.figures.first { $0.workload.hasPrefix("W5 edit-to-visibility") }
        for (name, value, target) in [("p50", w5?.median, "1"), ("p99", w5?.p99, "3")] {
            guard let value else { continue }
            report.comparisons.append(
                Comparison(
                    what: "W5 edit-to-visibility \(name)",
                    unit: "ms",
                    lansync: value,
                    against: "a NORMAL commit and a loopback round trip",
                    other: floor,
                    ratio: value / floor,
                    meaning: "how far above the floor an edit on A is committed on B (target ≤ \(target) ms)"
                )
            )
        }
        guard let sqlite = report.figure("CLI, one command", "sqlite3, one UPDATE (process start to exit)") else {
            return
        }
        for command in ["lansync set ID FIELD=VALUE", "lansync get ID"] {
            guard let ours = report.figure("CLI, one command", command) else { continue }
            report.comparisons.append(
                Comparison(
                    what: command + ", process start to exit",
                    unit: "ms",
                    lansync: ours.median,
                    against: "sqlite3 running one UPDATE",
                    other: sqlite.median,
                    ratio: ours.median / sqlite.median,
                    meaning: "how much longer a CLI command takes than the shell of the storage (target ≤ 2)"
                )
            )
        }
    }

    /// A TCP listener on a free loopback port: its socket and the port (network byte order).
    private func loopbackListener() throws -> (fd: Int32, port: in_port_t) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 1) == 0 else {
            close(listener)
            throw BenchError("bind/listen: \(String(cString: strerror(errno)))")
        }
        return (listener, address.sin_port)
    }

    /// A socket connected to `port` on loopback (-1 if it could not connect).
    private static func connectLoopback(_ port: in_port_t) -> Int32 {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_addr.s_addr = inet_addr("127.0.0.1")
        to.sin_port = port
        let connected = withUnsafePointer(to: &to) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if !connected { close(s) }
        return connected ? s : -1
    }

    /// One byte sent and echoed back over one loopback TCP connection (no Nagle), `count` times;
    /// returns each round trip in ms.
    private func loopbackRoundTrips(_ count: Int) throws -> [Double] {
        let (listener, port) = try loopbackListener()
        defer { close(listener) }
        let echo = Thread {
            let s = accept(listener, nil, nil)
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var byte: UInt8 = 0
            while recv(s, &byte, 1, 0) == 1 { _ = send(s, &byte, 1, Int32(MSG_NOSIGNAL)) }
            close(s)
        }
        echo.start()
        let s = Self.connectLoopback(port)
        guard s >= 0 else { throw BenchError("connect: \(String(cString: strerror(errno)))") }
        defer { close(s) }
        var one: Int32 = 1
        setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var samples: [Double] = []
        var byte: UInt8 = 7
        for _ in 0..<count {
            let t = now()
            guard send(s, &byte, 1, Int32(MSG_NOSIGNAL)) == 1, recv(s, &byte, 1, 0) == 1 else {
                throw BenchError("round trip: \(String(cString: strerror(errno)))")
            }
            samples.append((now() - t) * 1000)
        }
        return samples
    }

    /// Sends `bytes` through one loopback TCP connection; returns MB/s.
    private func loopbackThroughput(bytes: Int) throws -> Double {
        let (listener, port) = try loopbackListener()
        defer { close(listener) }
        let sender = Thread {
            let s = Self.connectLoopback(port)
            let chunk = [UInt8](repeating: 0x5a, count: 256 * 1024)
            var left = bytes
            while left > 0 {
                let n = chunk.withUnsafeBytes { send(s, $0.baseAddress, min(left, $0.count), Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                left -= n
            }
            close(s)
        }
        sender.start()
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { throw BenchError("accept: \(String(cString: strerror(errno)))") }
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var received = 0
        let start = now()
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += n
        }
        let seconds = now() - start
        guard received == bytes else { throw BenchError("loopback: received \(received) of \(bytes) bytes") }
        return Double(received) / seconds / 1e6
    }
}
