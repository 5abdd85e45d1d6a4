import BenchSQLite
import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore

/// The store alone, without processes or network: how fast `LansyncStore` takes local edits,
/// remote batches and conflicting merges, beside a plain SQLite table of the same rows written in
/// the same run (WAL, synchronous=FULL, 1,000 rows a transaction). Docs/BENCHMARKS.md, "The store
/// alone".
///
///     store-bench [ITEMS] [CONFLICTS] [SCRATCH]      defaults: 100000 10000 /tmp
@main
struct StoreBench {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        let items = arguments.first.flatMap { Int($0) } ?? 100_000
        let conflicts = arguments.dropFirst().first.flatMap { Int($0) } ?? 10_000
        let scratch = (arguments.dropFirst(2).first ?? NSTemporaryDirectory()) + "/store-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var bench = StoreBench(items: items, conflicts: min(conflicts, items), scratch: scratch)
        try bench.run()
    }

    let items: Int
    let conflicts: Int
    let scratch: String
    let t0: UInt64 = 1_800_000_000_000
    var rows: [(String, String, Double, String)] = []

    static let fieldsPerItem = 10

    static func id(_ i: Int) -> ItemID { try! ItemID("item-" + String(format: "%07d", i)) }

    /// The same values as the end-to-end runner's dataset: 49 bytes each.
    static func value(_ k: Int, _ i: Int) -> String {
        "value \(k) of item \(String(format: "%07d", i)) " + String(repeating: "x", count: 26 - String(k).count)
    }

    static func fields(_ i: Int) -> [Assignment] {
        (0..<fieldsPerItem).map { k in .set(try! FieldName("f\(k)"), .string(value(k, i))) }
    }

    func makeStore(_ name: String, node: UInt64) throws -> ReplicaStore {
        try ReplicaStore.create(
            path: "\(scratch)/\(name).sqlite",
            nodeID: NodeID(high: node, low: node),
            clusterID: NodeID(high: 99, low: 99),
            nodeName: name,
            fingerprint: "bench",
            lease: WriterLease(directory: scratch)
        )
    }

    func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = Date()
        try body()
        return Date().timeIntervalSince(start)
    }

    mutating func record(_ what: String, _ unit: String, _ value: Double, _ against: String = "") {
        rows.append((what, unit, value, against))
        print("  \(what): \(Int(value)) \(unit)")
    }

    /// Every field state `store` holds, in the batches a sync would send.
    func batches(of store: ReplicaStore, for remote: VersionVector = VersionVector()) throws -> [DeltaBatch] {
        var stream = try store.deltaStream(for: remote, maxUpdates: 512)
        var batches: [DeltaBatch] = []
        while let batch = try stream.next() { batches.append(batch) }
        return batches
    }

    mutating func run() throws {
        let fields = Double(items * Self.fieldsPerItem)
        print("store-bench: \(items) items × \(Self.fieldsPerItem) fields, \(conflicts) conflicts, in \(scratch)")

        // Local edits: one transaction of 1,000 items at a time, and the whole lot at once (import).
        let local = try makeStore("local", node: 1)
        let chunked = try seconds {
            var next = 0
            while next < items {
                let end = min(next + 1000, items)
                try local.applyEdits(wallMilliseconds: t0) { session in
                    for i in next..<end {
                        try session.apply(.create(type: "bench", assignments: Self.fields(i)), to: Self.id(i))
                    }
                }
                next = end
            }
        }
        record("local edits, 1,000 items a transaction", "fields/s", fields / chunked)
        let whole = try makeStore("whole", node: 2)
        let once = try seconds {
            try whole.applyEdits(wallMilliseconds: t0) { session in
                for i in 0..<items {
                    try session.apply(.create(type: "bench", assignments: Self.fields(i)), to: Self.id(i))
                }
            }
        }
        record("local edits, one transaction (as import)", "fields/s", fields / once)

        // Remote batches: everything `local` holds, applied to an empty replica.
        let outgoing = try batches(of: local)
        let remote = try makeStore("remote", node: 3)
        let sender = NodeID(high: 1, low: 1)
        let received = try seconds {
            for batch in outgoing {
                _ = try remote.apply(batch, from: sender, incarnation: sender, wallMilliseconds: t0)
            }
            try remote.completeStream(from: sender)
        }
        record("remote batches (\(outgoing.count) of up to 512)", "fields/s", fields / received)

        // Conflicting merges: `local` and `remote` agree; each sets f0 of `conflicts` items to its
        // own value; `remote`'s changes are then merged into `local`.
        let f0 = try FieldName("f0")
        for (store, tag) in [(local, "local"), (remote, "remote")] {
            try store.applyEdits(wallMilliseconds: t0 + 1) { session in
                for e in 0..<conflicts {
                    try session.apply(
                        .update([.set(f0, .string("\(tag) edit \(e)"))]),
                        to: Self.id(e * items / conflicts)
                    )
                }
            }
        }
        let remoteID = try remote.info().writerID
        let localHeld = try local.versionVector()
        let concurrent = try batches(of: remote, for: localHeld)
        let merged = try seconds {
            for batch in concurrent {
                _ = try local.apply(batch, from: remoteID, incarnation: remoteID, wallMilliseconds: t0 + 2)
            }
        }
        let open = try local.conflicts().count
        guard open == conflicts else {
            throw BenchError("expected \(conflicts) open conflicts after the merge, found \(open)")
        }
        record("conflicting merges", "fields/s", Double(conflicts) / merged)

        // The plain table, same rows, same durability.
        let plainPath = scratch + "/plain.sqlite"
        let plain = try SQLite(plainPath)
        try plain.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
        try plain.execute(
            "CREATE TABLE field (item TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (item, name)) WITHOUT ROWID"
        )
        let inserted = try seconds {
            try plain.execute("BEGIN")
            var written = 0
            for i in 0..<items {
                let id = Self.id(i).rawValue
                for k in 0..<Self.fieldsPerItem {
                    try plain.query(
                        "INSERT INTO field VALUES (?, ?, ?)",
                        [.text(id), .text("f\(k)"), .text(Self.value(k, i))]
                    )
                    written += 1
                    if written % 1000 == 0 { try plain.execute("COMMIT; BEGIN") }
                }
            }
            try plain.execute("COMMIT")
        }
        record("plain table: inserts", "rows/s", fields / inserted)
        let updated = try seconds {
            try plain.execute("BEGIN")
            for e in 0..<conflicts {
                try plain.query(
                    "UPDATE field SET value = ? WHERE item = ? AND name = 'f0'",
                    [.text("edit \(e)"), .text(Self.id(e * items / conflicts).rawValue)]
                )
                if (e + 1) % 1000 == 0 { try plain.execute("COMMIT; BEGIN") }
            }
            try plain.execute("COMMIT")
        }
        record("plain table: updates", "rows/s", Double(conflicts) / updated)

        let insertRate = fields / inserted
        let updateRate = Double(conflicts) / updated
        print("")
        print("| store alone | rate | ÷ plain table |")
        print("|---|---:|---:|")
        for (what, unit, value, _) in rows where !what.hasPrefix("plain") {
            let base = what.hasPrefix("conflicting") ? updateRate : insertRate
            print("| \(what) | \(Int(value)) \(unit) | \(String(format: "%.2f", value / base)) |")
        }
        print("| plain table: inserts, updates | \(Int(insertRate)), \(Int(updateRate)) rows/s | 1 |")
    }
}
