import Foundation
import GRDB
import LansyncCore
import LansyncJSON
import LansyncTestSupport
import Testing

// @testable: the conflict-count plan test checks the store's own statement, not a copy of it.
@testable import LansyncReplica
@testable import LansyncStore

/// The replica file itself: persistence, refusal of foreign or damaged files, the version index,
/// history, and counters that are never reused.
@Suite struct StoreFileTests {
    let dir = makeTemporaryDirectory("store")
    let t0: UInt64 = 1_700_000_000_000
    var path: String { dir + "/replica.sqlite" }
    /// This test's writer markers, apart from every other test's.
    var lease: WriterLease { WriterLease(directory: dir) }

    func create(_ path: String? = nil, node: UInt64 = 1, historyLimit: Int = 1000) throws -> ReplicaStore {
        try ReplicaStore.create(
            path: path ?? self.path,
            nodeID: .node(node),
            clusterID: .node(99),
            nodeName: "n\(node)",
            fingerprint: "fp",
            historyLimit: historyLimit,
            lease: lease
        )
    }

    @Test func editsSurviveReopening() throws {
        let store = try create()
        try store.apply(
            .create(
                type: "task",
                assignments: [.set(.named("title"), .string("Climb")), .add(.named("tags"), .string("x"))]
            ),
            to: .named("a"),
            wallMilliseconds: t0
        )
        let reopened = try ReplicaStore.open(path: path, lease: lease)
        let item = try #require(try reopened.storedItem(.named("a")))
        #expect(item.type == "task")
        #expect(item.fields.map(\.name.rawValue) == ["tags", "title"])
        #expect(item.fields.map(\.value.jsonText) == [#"["x"]"#, #""Climb""#])
        #expect(try reopened.info().nodeID == .node(1))
        #expect(try reopened.integrityCheck() == "ok")
    }

    /// A local edit is on disk when its commit returns: the writer connection runs with
    /// `synchronous = FULL` (2) from the moment the file opens (GRDB's pool sets NORMAL on it
    /// after our set-up ran, which left a CLI edit unsynced), and a peer's batch, committed with
    /// NORMAL, sets FULL back.
    @Test func localEditsAreSyncedWhenTheyCommit() throws {
        func level(_ store: ReplicaStore) throws -> Int? {
            try store.write { tx, _ in .rollback(try Int.fetchOne(tx.db, sql: "PRAGMA synchronous")) }
        }
        let created = try create()
        #expect(try level(created) == 2)
        let store = try ReplicaStore.open(path: path, lease: lease)
        #expect(try level(store) == 2)
        let resent: Int? = try store.write(.resent) { tx, _ in
            .rollback(try Int.fetchOne(tx.db, sql: "PRAGMA synchronous"))
        }
        #expect(resent == 1, "a peer's batch commits with NORMAL")
        #expect(try level(store) == 2)
    }

    /// A command's single connection (`Connections.one`) reads without writing (the file's bytes
    /// are the same after it closed, and no WAL is left), and commits its edits with
    /// `synchronous = FULL`, as the pool's writer does.
    @Test func aCommandsConnectionReadsWithoutWritingAndSyncsItsEdits() throws {
        do {
            let created = try create()
            try created.apply(
                .create(type: "t", assignments: [.set(.named("title"), .string("x"))]),
                to: .named("a"),
                wallMilliseconds: t0
            )
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            let store = try ReplicaStore.open(path: path, connections: .one, lease: lease)
            #expect(try store.storedItem(.named("a"))?.type == "t")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let store = try ReplicaStore.open(path: path, connections: .one, lease: lease)
        let level: Int? = try store.write { tx, _ in .rollback(try Int.fetchOne(tx.db, sql: "PRAGMA synchronous")) }
        #expect(level == 2)
    }

    /// The deepest value a field may hold is written and read back, as a set and as a list
    /// element; one level more is refused before anything is written (it once went in and left
    /// the file "damaged", found by fuzzing the API).
    @Test func theDeepestValueReadsBackAndADeeperOneIsRefused() throws {
        func nested(_ levels: Int) -> Value { (0..<levels).reduce(Value.integer(7)) { inner, _ in .list([inner]) } }
        let store = try create()
        let deepest = nested(Limits.maxValueNesting)
        try store.apply(
            .create(
                type: "t",
                assignments: [
                    .set(.named("deep"), deepest), .add(.named("tags"), nested(Limits.maxValueNesting - 1)),
                ]
            ),
            to: .named("a"),
            wallMilliseconds: t0
        )
        let reopened = try ReplicaStore.open(path: path, lease: lease)
        #expect(try reopened.fullCheck().isSound)
        let fields = try #require(try reopened.storedItem(.named("a"))).fields
        #expect(
            fields.map(\.value.jsonText) == [
                deepest.jsonText, Value.list([nested(Limits.maxValueNesting - 1)]).jsonText,
            ]
        )
        let before = try reopened.versionVector()
        #expect(throws: StoreError.edit(.valueTooDeep(.named("deeper"), nesting: Limits.maxValueNesting + 1), index: 0))
        {
            try reopened.apply(
                .update([.set(.named("deeper"), nested(Limits.maxValueNesting + 1))]),
                to: .named("a"),
                wallMilliseconds: t0
            )
        }
        #expect(throws: StoreError.edit(.valueTooDeep(.named("tags"), nesting: Limits.maxValueNesting + 1), index: 0)) {
            try reopened.apply(
                .update([.add(.named("tags"), nested(Limits.maxValueNesting))]),
                to: .named("a"),
                wallMilliseconds: t0
            )
        }
        #expect(throws: StoreError.edit(.valueTooDeep(.named("other"), nesting: Limits.maxValueNesting + 1), index: 0))
        {
            try reopened.apply(
                .update([.remove(.named("other"), nested(Limits.maxValueNesting))]),
                to: .named("a"),
                wallMilliseconds: t0
            )
        }
        #expect(try reopened.versionVector() == before)
        #expect(try reopened.fullCheck().isSound)
    }

    @Test func refusedEditChangesNothing() throws {
        let store = try create()
        try store.apply(
            .create(type: "task", assignments: [.set(.named("title"), .string("Climb"))]),
            to: .named("a"),
            wallMilliseconds: t0
        )
        let vv = try store.versionVector()
        let history = try store.history(.named("a"))
        #expect(throws: StoreError.edit(.notAList(.named("a"), .named("title"), kind: "string"), index: 0)) {
            try store.apply(
                .update([.set(.named("other"), .integer(1)), .add(.named("title"), .string("x"))]),
                to: .named("a"),
                wallMilliseconds: t0 + 1
            )
        }
        // In a batch, the failing edit's index is reported and the earlier edits are rolled back.
        #expect(throws: StoreError.edit(.itemExists(.named("a")), index: 1)) {
            try store.apply(
                [
                    (.named("b"), .create(type: "t", assignments: [])),
                    (.named("a"), .create(type: "t", assignments: [])),
                ],
                wallMilliseconds: t0 + 2
            )
        }
        #expect(try store.versionVector() == vv)
        #expect(try store.history(.named("a")) == history)
        #expect(try store.storedItem(.named("b")) == nil)
    }

    @Test func missingForeignAndDamagedFilesAreRefused() throws {
        #expect(throws: StoreError.notInitialised(directory: dir + "/none")) {
            try ReplicaStore.open(path: dir + "/none/replica.sqlite")
        }

        let garbage = dir + "/garbage.sqlite"
        _ = FileManager.default.createFile(atPath: garbage, contents: Data(repeating: 0x42, count: 8192))
        #expect(throws: StoreError.notAReplica(path: garbage, reason: "not a SQLite database")) {
            try ReplicaStore.open(path: garbage)
        }

        let foreign = dir + "/foreign.sqlite"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [foreign, "CREATE TABLE t(x); INSERT INTO t VALUES (1);"]
        try process.run()
        process.waitUntilExit()
        #expect(throws: StoreError.notAReplica(path: foreign, reason: "a SQLite database of another program")) {
            try ReplicaStore.open(path: foreign)
        }

        _ = try create()
        #expect(throws: StoreError.alreadyInitialised(directory: dir)) { try create() }
    }

    @Test func aNewerSchemaIsRefused() throws {
        _ = try create()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, "INSERT INTO grdb_migrations VALUES ('v99-from-the-future');"]
        try process.run()
        process.waitUntilExit()
        #expect(throws: StoreError.newerSchema(path: path)) { try ReplicaStore.open(path: path, lease: lease) }
    }

    /// "Unseen by V" is answered by a search of the version index, not a scan of the replica.
    @Test func unseenQueryUsesTheIndex() throws {
        _ = try create()
        let plan = try queryPlan(
            """
            SELECT v.counter, i.item_id, f.name FROM version v
            JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item
            WHERE v.node = 1 AND v.counter > 5 ORDER BY v.counter LIMIT 10;
            """
        )
        #expect(plan.contains("SEARCH v USING PRIMARY KEY (node=? AND counter>?)"), "\(plan)")
        #expect(!plan.contains("SCAN"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }

    /// Field states are written in the compact form (nodes as `node` rows, dots relative to the
    /// context; format 5 when the removal log is empty, 4 with the log), smaller than the
    /// absolute form, and read back the same.
    @Test func fieldStatesAreStoredCompactly() throws {
        let store = try create()
        try store.apply(
            .create(type: "t", assignments: [.set(.named("v"), .string("x"))]),
            to: .named("a"),
            wallMilliseconds: t0
        )
        let state = try #require(try store.itemState(.named("a"))?.fields[.named("v")])
        let blob = try DatabaseQueue(path: path).read { db in
            try #require(try Data.fetchOne(db, sql: "SELECT state FROM field WHERE name = 'v'"))
        }
        #expect(blob.first == 5)
        #expect(
            blob.count + 28 <= state.encoded.count,
            "\(blob.count) bytes stored, \(state.encoded.count) in the absolute form"
        )
        try store.apply(.update([.add(.named("tags"), .integer(1))]), to: .named("a"), wallMilliseconds: t0)
        try store.apply(.update([.remove(.named("tags"), .integer(1))]), to: .named("a"), wallMilliseconds: t0)
        let logged = try #require(try store.itemState(.named("a"))?.fields[.named("tags")])
        #expect(logged.removals.count == 1)
        let loggedBlob = try DatabaseQueue(path: path).read { db in
            try #require(try Data.fetchOne(db, sql: "SELECT state FROM field WHERE name = 'tags'"))
        }
        #expect(loggedBlob.first == 4)
        let reopened = try ReplicaStore.open(path: path, lease: lease)
        #expect(try reopened.itemState(.named("a"))?.fields[.named("v")] == state)
        #expect(try reopened.itemState(.named("a"))?.fields[.named("tags")] == logged)
    }

    /// Merging keeps each item's derived columns (type, deleted, conflict count) right without
    /// reading the item again (Transaction.DerivedChange): one statement per item, so merging N
    /// conflicts costs N, never N² (the W3 benchmark). Checked against the fields themselves after
    /// conflicts arise, one is resolved elsewhere, and a remote delete and retype arrive.
    @Test func mergesKeepEachItemsDerivedColumnsRight() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        let id = ItemID.named("x")
        let names = ["p", "q", "r"].map(FieldName.named)
        try a.apply(
            .create(type: "t", assignments: names.map { .set($0, .string("base")) }),
            to: id,
            wallMilliseconds: t0
        )
        try sync(a, b)
        try a.apply(.update(names.map { .set($0, .string("from a")) }), to: id, wallMilliseconds: t0 + 10)
        try b.apply(.update(names.map { .set($0, .string("from b")) }), to: id, wallMilliseconds: t0 + 20)
        try sync(a, b)
        try sync(b, a)
        func derived(_ store: ReplicaStore) throws -> (conflicts: Int, fields: Int, type: String, deleted: Bool) {
            try DatabaseQueue(path: store.path).read { db in
                let row = try #require(
                    try Row.fetchOne(db, sql: "SELECT conflicts, type, deleted FROM item WHERE item_id = 'x'")
                )
                let fields =
                    try Int.fetchOne(
                        db,
                        sql:
                            "SELECT count(*) FROM field f JOIN item i ON i.id = f.item WHERE i.item_id = 'x' AND f.conflict = 1"
                    ) ?? -1
                return (try row.decode(atIndex: 0), fields, try row.decode(atIndex: 1), try row.decode(atIndex: 2))
            }
        }
        for store in [a, b] {
            let d = try derived(store)
            #expect(d.conflicts == 3 && d.fields == 3)
        }
        try a.apply(.resolve(names[0], .string("settled")), to: id, wallMilliseconds: t0 + 30)
        try sync(a, b)
        #expect(try derived(b).conflicts == 2)
        #expect(try derived(b).fields == 2)
        try a.apply(.retype("u"), to: id, wallMilliseconds: t0 + 40)
        try a.apply(.delete, to: id, wallMilliseconds: t0 + 50)
        try sync(a, b)
        let after = try derived(b)
        #expect(after.type == "u" && after.deleted)
        #expect(after.conflicts == after.fields)
    }

    /// SQLite's plan for `sql` on the test replica, as the sqlite3 shell prints it.
    private func queryPlan(_ sql: String) throws -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, "EXPLAIN QUERY PLAN " + sql]
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func historyKeepsLosersAndIsBounded() throws {
        let a = try create(dir + "/a.sqlite", node: 1, historyLimit: 5)
        let b = try create(dir + "/b.sqlite", node: 2)
        let id = ItemID.named("x")
        let title = FieldName.named("title")
        try a.apply(.create(type: "t", assignments: [.set(title, .string("base"))]), to: id, wallMilliseconds: t0)
        try sync(a, b)
        try a.apply(.update([.set(title, .string("from a"))]), to: id, wallMilliseconds: t0 + 10)
        try b.apply(.update([.set(title, .string("from b"))]), to: id, wallMilliseconds: t0 + 20)
        try sync(a, b)
        try sync(b, a)
        let conflicts = try a.conflicts()
        #expect(conflicts.map(\.values) == [[.string("from b"), .string("from a")]])
        #expect(try b.conflicts() == conflicts)
        try a.apply(.resolve(title, .string("settled")), to: id, wallMilliseconds: t0 + 30)
        #expect(try a.conflicts().isEmpty)
        let history = try a.history(id, field: title)
        #expect(
            history.map(\.write) == [
                .assign(.string("settled")), .assign(.string("from b")), .assign(.string("from a")),
                .assign(.string("base")),
            ]
        )
        #expect(history.map(\.isLive) == [true, false, false, false])
        for i in 0..<20 { try a.apply(.update([.set(title, .integer(Int64(i)))]), to: id, wallMilliseconds: t0 + 40) }
        #expect(try a.history(id, field: title).count == 5)
        #expect(try a.history(id, field: title).first?.write == .assign(.integer(19)))
    }

    /// A restored backup must not reuse a dot, and its vector must not claim the lost writes: its
    /// next write starts a new writer, whatever the clocks say (the restore happens "earlier").
    @Test func aRestoredBackupWritesAsANewWriter() throws {
        let store = try create()
        try store.apply(.create(type: "t", assignments: []), to: .named("a"), wallMilliseconds: t0)
        // A backup taken while the file is open must include the write-ahead log.
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: dir + "/backup.sqlite" + suffix)
        }
        var issued: [UInt64] = []
        for i in 0..<50 {
            issued.append(
                try store.apply(
                    .update([.set(.named("n"), .integer(Int64(i)))]),
                    to: .named("a"),
                    wallMilliseconds: t0 + 5
                ).counter
            )
        }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: dir + "/backup.sqlite" + suffix) {
            try FileManager.default.copyItem(atPath: dir + "/backup.sqlite" + suffix, toPath: path + suffix)
        }
        let restored = try ReplicaStore.open(path: path, lease: lease)
        let next = try restored.apply(
            .update([.set(.named("n"), .string("after restore"))]),
            to: .named("a"),
            wallMilliseconds: t0 - 86_400_000
        )
        #expect(next.node != NodeID.node(1))
        #expect(next.counter == 1)
        #expect(try restored.writers().map(\.reason) == [.`init`, .restored])
        #expect(try restored.versionVector()[.node(1)] == 1, "the old writer's entry stays at what the file holds")
        #expect(try restored.info().writerID == next.node)
        // The new writer's continuity is proven from now on: no third writer.
        let after = try restored.apply(
            .update([.set(.named("n"), .string("again"))]),
            to: .named("a"),
            wallMilliseconds: t0
        )
        #expect(after == Dot(node: next.node, counter: 2))
    }

    /// Without a marker of this boot (a reboot, a snapshot booted again) continuity is unproven.
    @Test func aMissingMarkerStartsANewWriter() throws {
        let store = try create()
        try store.apply(.create(type: "t", assignments: []), to: .named("a"), wallMilliseconds: t0)
        let otherBoot = WriterLease(directory: dir, bootID: "another-boot")
        let reopened = try ReplicaStore.open(path: path, lease: otherBoot)
        let next = try reopened.apply(.update([.set(.named("n"), .integer(1))]), to: .named("a"), wallMilliseconds: t0)
        #expect(next.node != NodeID.node(1))
        #expect(try reopened.writers().last?.reason == .unproven)
    }

    /// A peer holding more of our own writes than we have (our replica lost them) gives them back,
    /// and retires the writer, so the next write takes a new one.
    @Test func ownWritesComeBackFromPeers() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        let dot = try a.apply(
            .create(type: "t", assignments: [.set(.named("k"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        try sync(a, b)
        let wiped = try create(dir + "/a2.sqlite", node: 1)
        try sync(b, wiped)
        #expect(try wiped.versionVector()[.node(1)] == dot.counter)
        #expect(try wiped.storedItem(.named("x"))?.fields.map(\.value.jsonText) == ["1"])
        let next = try wiped.apply(.update([.set(.named("k"), .integer(2))]), to: .named("x"), wallMilliseconds: 1)
        #expect(next.node != dot.node)
        #expect(try wiped.writers().last?.reason == .witness)
    }

    /// A lost write of ours that another member's write superseded comes back only as a field's
    /// context, perhaps in a batch whose covers name another writer (issue 64's review: once the
    /// hello's claims counted only as far as signed reports vouch, nothing retired the writer,
    /// and the next edit of the field would have reused a dot the state had seen, a trap). The
    /// batch's states retire it whatever the covers say.
    @Test func aStateThatSawMoreOfOurWriterRetiresIt() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        try a.apply(
            .create(type: "t", assignments: [.set(.named("k"), .integer(1))]),
            to: .named("x"),
            wallMilliseconds: t0
        )
        let writer = try a.info().writerID
        try sync(a, b)
        // b's copy of the field, as if a had written twice more (lost since) and b then wrote.
        let held = try a.versionVector()[writer]
        var state = FieldState()
        state.assign(
            .integer(5),
            dot: Dot(node: writer, counter: held + 2),
            timestamp: HLCTimestamp(rawValue: t0 << 16)
        )
        state.assign(
            .integer(6),
            dot: Dot(node: .node(2), counter: 9),
            timestamp: HLCTimestamp(rawValue: (t0 + 1) << 16)
        )
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: .named("x"), field: .named("k")), state: state)],
            covers: VersionVector([.node(2): 9])
        )
        try a.apply(batch, wallMilliseconds: t0 + 2)
        let next = try a.apply(.update([.set(.named("k"), .integer(7))]), to: .named("x"), wallMilliseconds: t0 + 3)
        #expect(next.node != writer)
        #expect(try a.writers().last?.reason == .witness)
    }

    /// A state that does not decode is never sent and never claimed, and the rest of the delta
    /// still goes (issue 12: ten such rows used to stop a node sending anything).
    @Test func aBrokenStateIsSkippedAndNeverClaimed() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        var dots: [String: Dot] = [:]
        for i in 0..<10 {
            dots["a\(i)"] = try a.apply(
                .create(type: "t", assignments: [.set(.named("n"), .integer(Int64(i)))]),
                to: .named("a\(i)"),
                wallMilliseconds: t0
            )
            try b.apply(
                .create(type: "t", assignments: [.set(.named("n"), .integer(Int64(i)))]),
                to: .named("b\(i)"),
                wallMilliseconds: t0
            )
        }
        try sync(b, a)
        try a.database.write { db in
            try db.execute(
                sql:
                    "UPDATE field SET state = X'DEADBEEF' WHERE name = 'n' AND item = (SELECT id FROM item WHERE item_id = 'a5')"
            )
        }
        let c = try create(dir + "/c.sqlite", node: 3)
        try sync(a, c)
        #expect(a.damage?.contains("a5.n") == true, "the sender is marked damaged")
        let vv = try c.versionVector()
        #expect(vv[.node(2)] == (try b.versionVector())[.node(2)], "every other origin's writes went")
        #expect(vv[.node(1)] < dots["a5"]!.counter, "the broken write is not claimed")
        #expect(try c.storedItem(.named("b9")) != nil)
        #expect(try c.storedItem(.named("a5")) == nil)
        #expect(throws: StoreError.self) {
            try a.apply(.update([.set(.named("n"), .integer(1))]), to: .named("a1"), wallMilliseconds: t0)
        }
    }

    /// A batch of field deltas taken against writes the receiver does not hold is refused whole:
    /// merging it could keep a list element whose removal the delta leaves out.
    @Test func aDeltaAgainstWritesNotHeldIsRefused() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        try a.apply(
            .create(type: "t", assignments: [.set(.named("tags"), .list((0..<10).map { .integer(Int64($0)) }))]),
            to: .named("l"),
            wallMilliseconds: t0
        )
        try a.apply(.update([.remove(.named("tags"), .integer(3))]), to: .named("l"), wallMilliseconds: t0)
        // A stream planned as if B had seen A's first write: B has not.
        let claimed = VersionVector([.node(1): 1])
        var stream = try a.deltaStream(for: claimed, maxUpdates: 10, deltaBase: claimed)
        let batch = try #require(try stream.next())
        let carriesDeltas = batch.updates.contains { $0.change.isDelta }
        #expect(carriesDeltas)
        #expect(throws: StoreError.staleDelta(base: claimed, held: VersionVector())) {
            try b.apply(batch, from: .node(1), incarnation: .node(1), wallMilliseconds: t0)
        }
        #expect(try b.storedItem(.named("l")) == nil)
        #expect(try b.versionVector().isEmpty)
        // Against what B holds (nothing), the same change is a whole state, and merges.
        try sync(a, b)
        #expect(try b.itemState(.named("l")) == (try a.itemState(.named("l"))))
    }

    /// A field written again while a stream to a peer is under way, before the stream reached the
    /// write it supersedes, still travels in that stream. The stream claims that earlier write
    /// (its covers), so a later delta leaves the write's list element out: were the field not sent
    /// here, the peer would never get the element, with version vectors that say it has.
    @Test func aFieldWrittenAgainWhileStreamingStillTravels() throws {
        let a = try create(dir + "/a.sqlite", node: 1)
        let b = try create(dir + "/b.sqlite", node: 2)
        try a.apply(
            .create(type: "t", assignments: [.set(.named("tags"), .list((0..<20).map { .integer(Int64($0)) }))]),
            to: .named("l"),
            wallMilliseconds: t0
        )
        try stream(a, b)
        try a.apply(.update([.add(.named("tags"), .integer(100))]), to: .named("l"), wallMilliseconds: t0)
        let held = try b.versionVector()
        var stream = try a.deltaStream(for: held, maxUpdates: 10, deltaBase: held)
        // Before the stream reads anything: this write supersedes the one it is to send.
        try a.apply(.update([.add(.named("tags"), .integer(101))]), to: .named("l"), wallMilliseconds: t0)
        while let batch = try stream.next(peerHolds: held) {
            try b.apply(batch, from: .node(1), incarnation: .node(1), wallMilliseconds: t0)
        }
        try b.completeStream(from: .node(1))
        // The next delta is taken against everything that stream claimed.
        try self.stream(a, b)
        #expect(try b.versionVector() == (try a.versionVector()))
        #expect(try b.itemState(.named("l")) == (try a.itemState(.named("l"))))
    }

    /// One whole stream of field deltas, as a session sends it: batches, then completion.
    func stream(_ from: ReplicaStore, _ to: ReplicaStore) throws {
        let sender = try from.info().nodeID
        let held = try to.versionVector()
        var stream = try from.deltaStream(for: held, maxUpdates: 10, deltaBase: held)
        while let batch = try stream.next(peerHolds: held) {
            try to.apply(batch, from: sender, incarnation: sender, wallMilliseconds: t0)
        }
        try to.completeStream(from: sender)
    }

    func sync(_ from: ReplicaStore, _ to: ReplicaStore) throws {
        let held = try to.versionVector()
        var stream = try from.deltaStream(for: held, maxUpdates: 3, deltaBase: held)
        while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: t0) }
    }
}
