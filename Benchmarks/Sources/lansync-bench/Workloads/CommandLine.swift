import BenchSQLite
import Foundation

extension Bench {
    /// CLI: how long one command takes from process start to exit, as a user (or a script that
    /// runs it in a loop) feels it: `lansync --version`, `get` and `set` (one field) on a replica
    /// of `smallItems` items with no node running, beside the `sqlite3` shell running one UPDATE
    /// on a WAL file (its own process start, open, statement and commit). Each is run `runs`
    /// times ten, one after another; the figure is the median.
    func commandLine() throws {
        let replica = try smallReplicas.a
        let plain = lansync.work + "/cli-plain.sqlite"
        let db = try SQLite(plain)
        try db.execute(
            "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v INTEGER); INSERT OR IGNORE INTO t VALUES (1, 0)"
        )
        let times = settings.runs * 10
        let item = Dataset.id(7)
        let commands: [(String, (Int) -> [String])] = [
            (
                "sqlite3, one UPDATE (process start to exit)",
                { _ in ["sqlite3", plain, "UPDATE t SET v = v + 1 WHERE k = 1"] }
            ),
            ("lansync --version", { _ in [self.lansync.binary, "--version"] }),
            ("lansync get ID", { _ in [self.lansync.binary, "get", "--dir", replica.dir, item] }),
            (
                "lansync set ID FIELD=VALUE",
                { e in [self.lansync.binary, "set", "--dir", replica.dir, item, "f3=cli \(e)"] }
            ),
        ]
        for (what, arguments) in commands {
            var samples: [Double] = []
            for e in 0..<times {
                let started = now()
                let child = try Child(arguments(e))
                guard child.wait() == 0 else { throw BenchError("CLI: \(child.command) failed") }
                samples.append((now() - started) * 1000)
            }
            report.add(Figure("CLI, one command", what, unit: "ms", samples: samples))
        }
    }
}
