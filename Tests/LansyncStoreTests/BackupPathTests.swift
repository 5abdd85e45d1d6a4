import Foundation
import LansyncCore
import LansyncTestSupport
import Testing

@testable import LansyncReplica
@testable import LansyncStore

/// Issue 62: where `backup` may write, over random paths a user could type. A sandbox holds the
/// data directory (replica, its log, other files), a folder with files in it, a regular file, a
/// symbolic link to the replica, one to the folder, a hard link to the replica; each round picks a
/// path among them (with or without a trailing slash, through `..`, under a missing folder, new
/// or existing) and `--force` or not, and backs up. Whatever the answer, no directory lost a
/// file, nothing in the data directory changed, and a path that was taken now holds a whole
/// backup; a refusal says why in one line.
@Suite struct BackupPathTests {
    @Test func noPathCostsADirectoryOrTheReplica() throws {
        let root = makeTemporaryDirectory("backup-paths")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        let data = root + "/data"
        try fm.createDirectory(atPath: data, withIntermediateDirectories: true)
        let store = try ReplicaStore.create(
            path: data + "/replica.sqlite",
            nodeID: .node(1),
            clusterID: .node(99),
            nodeName: "n",
            fingerprint: "fp",
            lease: WriterLease(directory: root + "/lease")
        )
        try store.apply(
            .create(type: "t", assignments: [.set(.named("v"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: 1
        )
        try "token".write(toFile: data + "/api-token", atomically: true, encoding: .utf8)
        try fm.createDirectory(atPath: root + "/folder/inner", withIntermediateDirectories: true)
        for name in ["one", "two", "inner/three"] {
            try name.write(toFile: root + "/folder/" + name, atomically: true, encoding: .utf8)
        }
        try fm.createSymbolicLink(atPath: root + "/to-replica", withDestinationPath: data + "/replica.sqlite")
        try fm.createSymbolicLink(atPath: root + "/to-folder", withDestinationPath: root + "/folder")
        try fm.createSymbolicLink(atPath: root + "/to-data", withDestinationPath: data)
        try fm.linkItem(atPath: data + "/replica.sqlite", toPath: root + "/hard-replica")

        func files(under path: String) -> [String] {
            (fm.enumerator(atPath: path)?.allObjects as? [String] ?? []).sorted()
        }
        let folderBefore = files(under: root + "/folder")
        let dataBefore = files(under: data).filter { !$0.hasSuffix("-shm") && !$0.hasSuffix("-wal") }
        let replicaInode = (try fm.attributesOfItem(atPath: data + "/replica.sqlite"))[.systemFileNumber] as? Int

        let bases = [
            "folder", "folder/inner", "data", "data/replica.sqlite", "data/replica.sqlite-wal",
            "data/api-token", "data/new.sqlite", "to-replica", "to-folder", "to-folder/new.sqlite", "to-data/x.sqlite",
            "hard-replica", "missing/x.sqlite", "folder/../data/y.sqlite", "file.sqlite", "new.sqlite", ".",
            "folder/inner/../../data/z.sqlite",
        ]
        var rng = SplitMix64(seed: 62)
        var taken = 0
        var refused = 0
        for round in 0..<200 {
            var path = root + "/" + rng.pick(bases)
            if rng.chance(20) { path += "/" }
            let force = rng.chance(70)
            if rng.chance(30) {
                try? "a file of the user's".write(toFile: root + "/file.sqlite", atomically: true, encoding: .utf8)
            }
            do {
                let summary = try store.backup(to: path, replacing: force, wallMilliseconds: UInt64(round))
                taken += 1
                #expect(summary.items == 1, "\(path)")
                var isDirectory: ObjCBool = false
                #expect(fm.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue, "\(path)")
                try? fm.removeItem(atPath: path)
            } catch {
                refused += 1
                let words = "\(error)"
                #expect(!words.contains("\n") && !words.isEmpty, "\(path): \(words)")
            }
            #expect(files(under: root + "/folder") == folderBefore, "round \(round): \(path) changed the folder")
            let dataNow = files(under: data).filter { !$0.hasSuffix("-shm") && !$0.hasSuffix("-wal") }
            #expect(dataNow == dataBefore, "round \(round): \(path) changed the data directory: \(dataNow)")
            #expect(
                (try? fm.attributesOfItem(atPath: data + "/replica.sqlite"))?[.systemFileNumber] as? Int == replicaInode
            )
        }
        #expect(taken > 0 && refused > 0, "both answers were met: \(taken) taken, \(refused) refused")
        #expect(try store.storedItem(.named("x"))?.value(of: .named("v")) == .integer(1))
        let leftovers = files(under: root).filter { $0.contains(".partial-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
