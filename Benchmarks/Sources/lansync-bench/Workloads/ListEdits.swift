import BenchSQLite
import Foundation

extension Bench {
    /// W7: A and B running and connected; one list field of N elements (100, 1,000, 10,000). One
    /// element is added on A, then removed; for each edit, the bytes A sends B until both agree.
    /// A delta of a list edit should cost the same whatever the list's length (issue 15).
    func listEdits() throws {
        for n in [100, 1_000, 10_000] {
            let label = "W7 list edits, a list of \(n.grouped) elements"
            var added: [Double] = []
            var removed: [Double] = []
            for r in 0..<settings.runs {
                let source = try lansync.makeReplica("w7-\(n)-a\(r)")
                let target = try lansync.makeReplica("w7-\(n)-b\(r)")
                let input = lansync.work + "/w7.jsonl"
                let elements = (0..<n).map { "\"element \($0)\"" }.joined(separator: ",")
                try #"{"id":"list","fields":{"tags":[\#(elements)]}}"#.write(
                    toFile: input,
                    atomically: true,
                    encoding: .utf8
                )
                try source.importFile(input)
                let a = try lansync.start(source)
                let b = try lansync.start(target, peers: [a])
                let probes = try [ReplicaProbe(source.dir), ReplicaProbe(target.dir)]
                try waitConverged(probes, timeout: 300)
                func bytesOf(_ edit: String) throws -> Double {
                    let before = try a.settledCounters(with: [target], keys: ["sent_bytes"])[0]["sent_bytes"]!
                    _ = try lansync.cli(["set", "--dir", source.dir, "list", edit])
                    try waitConverged(probes, timeout: 60)
                    let after = try a.settledCounters(with: [target], keys: ["sent_bytes"])[0]["sent_bytes"]!
                    return Double(after - before)
                }
                added.append(try bytesOf("tags+=added in run \(r)"))
                removed.append(try bytesOf("tags-=added in run \(r)"))
                b.stop()
                a.stop()
            }
            report.add(Figure(label, "bytes A→B for one addition", unit: "B", samples: added))
            report.add(Figure(label, "bytes A→B for one removal", unit: "B", samples: removed))
        }
    }
}
