import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestLane
import LansyncTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import LansyncPostgres

/// The replica kept in PostgreSQL, as far as it is built (local edits and item reads), on a
/// server each test starts: it must show exactly what the SQLite store and the merge core's
/// model show after the same edits.
@Suite(.serialized, .computeBound) struct PostgresReplicaTests {
    static let logger = Logger(label: "test")

    static func replica(_ server: TemporaryPostgres, schema: String, node: UInt64 = 1) throws -> PostgresReplica {
        try PostgresReplica.create(
            at: try PostgresLocation(parsing: server.uri),
            schema: schema,
            nodeID: .node(node),
            clusterID: .node(99),
            nodeName: "r\(node)",
            fingerprint: "test",
            logger: logger
        )
    }

    /// A SQLite replica of the same cluster, file `name.sqlite` in `dir`, to compare with.
    static func sqlite(_ dir: String, _ name: String, node: UInt64 = 1) throws -> ReplicaStore {
        try ReplicaStore.create(
            path: "\(dir)/\(name).sqlite",
            nodeID: .node(node),
            clusterID: .node(99),
            nodeName: node == 1 ? "r1" : name,
            fingerprint: "test",
            lease: WriterLease(directory: dir)
        )
    }

    /// A random local edit of one of four items, valid or not (the store must refuse what the
    /// model refuses, with the same error).
    static func randomEdit(_ model: Replica, using rng: inout SplitMix64) -> (ItemID, ItemEdit) {
        let id = ItemID.named("i\(Int.random(in: 0..<4, using: &rng))")
        let fields = ["a", "b", "tags"].map(FieldName.named)
        let field = rng.pick(fields)
        let value = EdgeValues.random(using: &rng)
        guard model.items[id]?.exists ?? false else {
            return (id, .create(type: rng.pick(["task", "note"]), assignments: [.set(field, value)]))
        }
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return (id, .delete)
        case 1: return (id, .restore)
        case 2: return (id, .resolve(field, value))
        case 3, 4: return (id, .update([.add(.named("tags"), rng.pick(EdgeValues.elements))]))
        case 5: return (id, .update([.remove(.named("tags"), rng.pick(EdgeValues.elements))]))
        default: return (id, .update([.set(field, value)]))
        }
    }

    /// Every item, deleted ones included, as a store lists them.
    static func items(_ read: ((StoredItem) throws -> Void) throws -> Void) rethrows -> [StoredItem] {
        var items: [StoredItem] = []
        try read { items.append($0) }
        return items
    }

    @Test func localEditsShowWhatTheSQLiteStoreAndTheModelShow() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-replica")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for seed in 0..<UInt64(max(4, propertyCases(default: 400) / 50)) {
            var rng = SplitMix64(seed: seed)
            var model = Replica(nodeID: .node(1))
            let sqlite = try Self.sqlite(dir, "r\(seed)")
            let pg = try Self.replica(server, schema: "seed_\(seed)")
            defer { pg.close() }
            var wall: UInt64 = 1_700_000_000_000
            for step in 0..<60 {
                wall += UInt64.random(in: 0...20, using: &rng)
                let (id, edit) = Self.randomEdit(model, using: &rng)
                let modelled = Result { () throws(EditError) in try model.apply(edit, to: id, wallMilliseconds: wall) }
                let stored = Result { () throws(StoreError) in try sqlite.apply(edit, to: id, wallMilliseconds: wall) }
                let kept = Result { () throws(StoreError) in try pg.apply(edit, to: id, wallMilliseconds: wall) }
                switch (modelled, stored, kept) {
                case let (.success(m), .success(s), .success(p)):
                    // Each issues its writer's next dot (the SQLite store's first edit starts a
                    // writer of its own; the model's writer is not its node id either).
                    #expect(
                        m.counter == s.counter && s.counter == p.counter,
                        "seed \(seed) step \(step): dots \(m), \(s), \(p)"
                    )
                case let (.failure(m), .failure(.edit(s, _)), .failure(.edit(p, _))):
                    #expect(m == s && s == p, "seed \(seed) step \(step)")
                default:
                    Issue.record("seed \(seed) step \(step): model \(modelled), SQLite \(stored), PostgreSQL \(kept)")
                    return
                }
                let shown = try Self.items {
                    try pg.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0)
                }
                let sqliteShows = try Self.items { try sqlite.forEachItem(includeDeleted: true, $0) }
                guard shown == sqliteShows else {
                    Issue.record("seed \(seed) step \(step): PostgreSQL shows \(shown), SQLite \(sqliteShows)")
                    return
                }
                let modelShows = model.items.values.filter(\.exists).sorted {
                    $0.id.rawValue.utf8.lexicographicallyPrecedes($1.id.rawValue.utf8)
                }
                .map(StoredItem.init)
                #expect(shown == modelShows, "seed \(seed) step \(step)")
                #expect(try pg.conflicts() == sqlite.conflicts(), "seed \(seed) step \(step)")
                let (pgState, sqliteState) = (try pg.itemState(id), try sqlite.itemState(id))
                #expect(pgState.map(StoredItem.init) == sqliteState.map(StoredItem.init), "seed \(seed) step \(step)")
                #expect(
                    pgState?.fields.mapValues { $0.versions.map(\.dot.counter) }
                        == sqliteState?.fields.mapValues { $0.versions.map(\.dot.counter) },
                    "seed \(seed) step \(step)"
                )
            }
            #expect(
                try pg.versionVector().counters.values.sorted() == model.versionVector.counters.values.sorted(),
                "seed \(seed)"
            )
            #expect(try pg.counts() == sqlite.counts(), "seed \(seed)")
            let typed = try Self.items {
                try pg.forEachItem(type: "task", includeDeleted: false, withLocalEdits: true, $0)
            }
            #expect(typed == (try Self.items { try sqlite.forEachItem(type: "task", withLocalEdits: true, $0) }))
            // The latest live local edit of each item, by counter (the writers' ids differ).
            #expect(
                typed.map { $0.localEdit?.counters.values.sorted() }
                    == (try Self.items { try sqlite.forEachItem(type: "task", withLocalEdits: true, $0) })
                    .map { $0.localEdit?.counters.values.sorted() }
            )
            // The digest's reads: the same marks, and the same items changed since them.
            var (pgAll, sqliteAll) = ([StoredItem](), [StoredItem]())
            let marks = try pg.forEachItem(changedAfter: nil) { pgAll.append($0) }
            let sqliteMarks = try sqlite.forEachItem(changedAfter: nil) { sqliteAll.append($0) }
            // (The SQLite store's numbers start past a floor: its first edit here started a writer
            // of its own and moved the feed past any number an older copy gave.)
            #expect(marks.stamp == sqliteMarks.stamp && marks.items == sqliteMarks.items, "seed \(seed)")
            #expect(pgAll == sqliteAll && pgAll.count == marks.items, "seed \(seed)")
            let later = ItemEdit.create(type: "late", assignments: [.set(.named("a"), .integer(1))])
            _ = try? pg.apply(later, to: .named("late"), wallMilliseconds: wall + 1)
            _ = try? sqlite.apply(later, to: .named("late"), wallMilliseconds: wall + 1)
            var (pgSince, sqliteSince) = ([StoredItem](), [StoredItem]())
            let next = try pg.forEachItem(changedAfter: marks.latestSeq) { pgSince.append($0) }
            let sqliteNext = try sqlite.forEachItem(changedAfter: sqliteMarks.latestSeq) { sqliteSince.append($0) }
            #expect(next.stamp == sqliteNext.stamp && next.items == sqliteNext.items)
            #expect(pgSince == sqliteSince && pgSince.map(\.id) == [.named("late")], "seed \(seed)")
            #expect(next.stamp == marks.stamp + 1 && next.latestSeq > marks.latestSeq)
        }
    }

    /// The replica's deltas, read through the same ``DeltaStream`` as the SQLite store's, bring
    /// a receiver to what the SQLite store's deltas and the model's bring theirs, and the replica
    /// as a receiver of the SQLite store's deltas ends where a SQLite receiver does: the senders
    /// and the receivers all take random edits, so deltas meet concurrent writes (conflicts) and
    /// partial knowledge, in batches of random sizes, whole states or field deltas.
    @Test func itsDeltasBringAReceiverWhereTheSQLiteStoresDo() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-deltas")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for seed in 0..<UInt64(max(4, propertyCases(default: 400) / 50)) {
            var rng = SplitMix64(seed: seed)
            func sqlite(_ node: UInt64, _ name: String) throws -> ReplicaStore {
                try Self.sqlite(dir, "\(seed)-\(name)", node: node)
            }
            let pg = try Self.replica(server, schema: "deltas_\(seed)")
            defer { pg.close() }
            let pgReceiver = try Self.replica(server, schema: "received_\(seed)", node: 2)
            defer { pgReceiver.close() }
            let (sender, receiver, fromPG) = (
                try sqlite(1, "sender"), try sqlite(2, "receiver"), try sqlite(2, "from-pg")
            )
            var (modelSender, modelReceiver) = (Replica(nodeID: .node(1)), Replica(nodeID: .node(2)))
            var wall: UInt64 = 1_700_000_000_000
            for step in 0..<50 {
                wall += UInt64.random(in: 0...20, using: &rng)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<4:
                    let (id, edit) = Self.randomEdit(modelSender, using: &rng)
                    _ = try? modelSender.apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? sender.apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? pg.apply(edit, to: id, wallMilliseconds: wall)
                case 4..<6:
                    let (id, edit) = Self.randomEdit(modelReceiver, using: &rng)
                    _ = try? modelReceiver.apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? receiver.apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? fromPG.apply(edit, to: id, wallMilliseconds: wall)
                    _ = try? pgReceiver.apply(edit, to: id, wallMilliseconds: wall)
                default:
                    let size = Int.random(in: 1...6, using: &rng)
                    let deltas = rng.chance(70)
                    for batch in modelSender.delta(
                        for: modelReceiver.versionVector,
                        maxUpdates: size,
                        deltaBase: deltas ? modelReceiver.versionVector : nil
                    ) {
                        let merged = modelReceiver.apply(batch, wallMilliseconds: wall)
                        #expect(merged)
                    }
                    for (from, to) in [(sender as any DeltaReading, receiver), (pg, fromPG)] {
                        let held = try to.versionVector()
                        var stream = try DeltaStream.start(
                            from: from,
                            for: held,
                            maxUpdates: size,
                            budgetBytes: 2 << 20,
                            unclaimed: true,
                            deltaBase: deltas ? held : nil
                        )
                        while let batch = try stream.next() { try to.apply(batch, wallMilliseconds: wall) }
                    }
                    let held = try pgReceiver.versionVector()
                    var stream = try sender.deltaStream(for: held, maxUpdates: size, deltaBase: deltas ? held : nil)
                    while let batch = try stream.next() { try pgReceiver.apply(batch, wallMilliseconds: wall) }
                }
                let got = try Self.items { try fromPG.forEachItem(includeDeleted: true, $0) }
                let expected = try Self.items { try receiver.forEachItem(includeDeleted: true, $0) }
                guard got == expected else {
                    Issue.record("seed \(seed) step \(step): from PostgreSQL \(got), from SQLite \(expected)")
                    return
                }
                let modelled = modelReceiver.items.values.filter(\.exists)
                    .sorted { $0.id.rawValue.utf8.lexicographicallyPrecedes($1.id.rawValue.utf8) }.map(StoredItem.init)
                #expect(got == modelled, "seed \(seed) step \(step)")
                #expect(
                    try fromPG.conflicts().map(\.values) == receiver.conflicts().map(\.values),
                    "seed \(seed) step \(step)"
                )
                let received = try Self.items {
                    try pgReceiver.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0)
                }
                #expect(received == expected, "seed \(seed) step \(step): received in PostgreSQL")
                #expect(
                    try pgReceiver.conflicts().map(\.values) == receiver.conflicts().map(\.values),
                    "seed \(seed) step \(step)"
                )
                #expect(try pgReceiver.counts() == receiver.counts(), "seed \(seed) step \(step)")
            }
            // The version index counts what a receiver lacks as the SQLite store's does: all of
            // it for an empty replica, nothing once a whole delta went.
            #expect(try pg.lacking(VersionVector(), cap: 10_000) == sender.lacking(VersionVector(), cap: 10_000))
            #expect(try pg.lacking(VersionVector(), cap: 10_000) > 0)
            var last: DeltaStream = try pg.deltaStream(
                for: try fromPG.versionVector(),
                maxUpdates: 3,
                budgetBytes: 2 << 20,
                unclaimed: true,
                deltaBase: nil
            )
            while let batch = try last.next() { try fromPG.apply(batch, wallMilliseconds: wall) }
            #expect(try pg.lacking(try fromPG.versionVector(), cap: 10_000) == 0)
        }
    }

    /// A stream's batches join the version vector only when it completes; one cut off leaves
    /// its progress for the next session to resume from; a new incarnation of the sender starts
    /// over. The resumed stream completes the receiver: the same items and vector as the sender.
    @Test func aStreamCutOffResumesAndCompletes() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let (a, b) = (try Self.replica(server, schema: "a"), try Self.replica(server, schema: "b", node: 2))
        defer {
            a.close()
            b.close()
        }
        for n in 0..<20 {
            try a.apply(
                .create(type: "task", assignments: [.set(.named("n"), .integer(Int64(n)))]),
                to: .named("i\(n)"),
                wallMilliseconds: 1_700_000_000_000
            )
        }
        let sender = NodeID.node(1)
        try b.meet(sender, incarnation: sender)
        var stream: DeltaStream = try a.deltaStream(
            for: VersionVector(),
            maxUpdates: 4,
            budgetBytes: 2 << 20,
            unclaimed: true,
            deltaBase: nil
        )
        for _ in 0..<3 {
            let batch = try #require(try stream.next())
            try b.receive(batch, from: sender, incarnation: sender, wallMilliseconds: 1_700_000_000_001)
        }
        // Cut off: fields arrived, nothing is claimed yet; the progress waits for a resume.
        #expect(try b.versionVector()[sender] == 0)
        #expect(try b.counts().items > 0)
        let start = try b.sessionStart(with: sender)
        let progress = try #require(start.resume)
        #expect(progress.incarnation == sender && progress.covers[sender] > 0)
        // The next session resumes from what the receiver holds and what the stream got to.
        var from = start.vector
        from.join(progress.covers)
        var resumed: DeltaStream = try a.deltaStream(
            for: from,
            maxUpdates: 4,
            budgetBytes: 2 << 20,
            unclaimed: false,
            deltaBase: nil
        )
        var last: DeltaBatch?
        while let batch = try resumed.next() {
            if let previous = last {
                try b.receive(previous, from: sender, incarnation: sender, wallMilliseconds: 1_700_000_000_002)
            }
            last = batch
        }
        if let last {
            try b.receive(
                last,
                from: sender,
                incarnation: sender,
                wallMilliseconds: 1_700_000_000_002,
                completingStream: true
            )
        } else {
            try b.completeStream(from: sender, rejoinedAt: nil)
        }
        #expect(try b.versionVector() == a.versionVector())
        #expect(try b.sessionStart(with: sender).resume == nil)
        let shown = try Self.items { try b.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0) }
        #expect(
            shown == (try Self.items { try a.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false, $0) })
        )
        #expect(shown.count == 20)
        // A progress of another incarnation is dropped when the sender says hello anew.
        let batch = DeltaBatch(updates: [], covers: VersionVector([sender: 25]))
        try b.receive(batch, from: sender, incarnation: sender, wallMilliseconds: 1_700_000_000_003)
        #expect(try b.sessionStart(with: sender).resume != nil)
        try b.meet(sender, incarnation: .node(7))
        #expect(try b.sessionStart(with: sender).resume == nil)
    }

    /// The writers a batch names are checked before anything is written, as in the SQLite
    /// store: covers naming writers nobody vouches for are left out, and a batch naming more new
    /// writers than the session may bring is refused whole.
    @Test func madeUpWritersAreLeftOutOrRefused() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let replica = try Self.replica(server, schema: "writers")
        defer { replica.close() }
        let sender = NodeID.node(2)
        func update(_ item: String, seeing others: [NodeID], counter: UInt64 = 1) -> FieldUpdate {
            var state = FieldState()
            for node in others {
                state.assign(.string("seen"), dot: Dot(node: node, counter: 1), timestamp: HLCTimestamp(rawValue: 1))
            }
            state.assign(.string("v"), dot: Dot(node: sender, counter: counter), timestamp: HLCTimestamp(rawValue: 2))
            return FieldUpdate(key: FieldKey(item: .named(item), field: .named("f")), state: state)
        }
        var covers = Dictionary(uniqueKeysWithValues: (0..<500).map { (NodeID.node(10_000 + UInt64($0)), UInt64(1)) })
        covers[sender] = 1
        let received = try replica.receive(
            DeltaBatch(updates: [update("x", seeing: [])], covers: VersionVector(covers)),
            from: sender,
            incarnation: sender,
            wallMilliseconds: 1_700_000_000_000,
            completingStream: true
        )
        #expect(received.unverifiedCovers == 500 && received.newWriters == 1 && received.changed == 1)
        #expect(try replica.versionVector() == VersionVector([sender: 1]))
        let madeUp = (0..<50).map { NodeID.node(20_000 + UInt64($0)) }
        #expect(throws: StoreError.tooManyNewWriters(new: 50, perSession: 40)) {
            try replica.receive(
                DeltaBatch(updates: [update("y", seeing: madeUp)], covers: VersionVector()),
                from: sender,
                incarnation: sender,
                wallMilliseconds: 1_700_000_000_000,
                writers: WriterBounds(total: 1_000, perSession: 40)
            )
        }
        #expect(throws: StoreError.tooManyWriters(held: 2, new: 50, limit: 10)) {
            try replica.receive(
                DeltaBatch(updates: [update("y", seeing: madeUp)], covers: VersionVector()),
                from: sender,
                incarnation: sender,
                wallMilliseconds: 1_700_000_000_000,
                writers: WriterBounds(total: 10, perSession: 100)
            )
        }
        #expect(try replica.itemState(.named("y")) == nil)
        #expect(try replica.versionVector() == VersionVector([sender: 1]))
        // A writer named only in a state's context (a write it saw, replaced since) is new once:
        // the state's save gives it a row, so the same batch again brings none.
        let seen = NodeID.node(30_000)
        let once = try replica.receive(
            DeltaBatch(updates: [update("z", seeing: [seen], counter: 2)], covers: VersionVector()),
            from: sender,
            incarnation: sender,
            wallMilliseconds: 1_700_000_000_000
        )
        let again = try replica.receive(
            DeltaBatch(updates: [update("z", seeing: [seen], counter: 2)], covers: VersionVector()),
            from: sender,
            incarnation: sender,
            wallMilliseconds: 1_700_000_000_000
        )
        #expect(once.newWriters == 1 && again.newWriters == 0)
        // The progress of a stream joins what each batch covered.
        try replica.receive(
            DeltaBatch(updates: [], covers: VersionVector([sender: 1])),
            from: .node(3),
            incarnation: .node(3),
            wallMilliseconds: 1
        )
        try replica.receive(
            DeltaBatch(updates: [], covers: VersionVector([seen: 1])),
            from: .node(3),
            incarnation: .node(3),
            wallMilliseconds: 1
        )
        #expect(try replica.sessionStart(with: .node(3)).resume?.covers == VersionVector([sender: 1, seen: 1]))
    }

    /// Peers, names, the cluster's statements, refusals of the replica's own writes and the
    /// change stamp read back as the SQLite store's do after the same calls.
    @Test func itsBookkeepingReadsAsTheSQLiteStores() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-bookkeeping")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pg = try Self.replica(server, schema: "books")
        defer { pg.close() }
        let sqlite = try Self.sqlite(dir, "r")
        let records = [
            PeerRecord(
                nodeID: .node(3),
                name: "three",
                address: "10.0.0.3:7420",
                source: .mdns,
                lastSync: 17,
                versionVector: VersionVector([.node(3): 4, .node(1): 2])
            ),
            PeerRecord(nodeID: .node(2), source: .inbound),
            PeerRecord(nodeID: .node(4), source: .relay, lastError: "refused"),
        ]
        for record in records {
            try pg.savePeer(record)
            try sqlite.savePeer(record)
        }
        var changed = records[1]
        changed.lastSync = 99
        changed.versionVector = VersionVector([.node(2): 1])
        try pg.savePeer(changed)
        try sqlite.savePeer(changed)
        #expect(try pg.peers() == sqlite.peers())
        #expect(try pg.peers().count == 3)
        #expect(try pg.peers().first { $0.nodeID == .node(2) }?.lastSync == 99)
        #expect(try pg.nodeNames() == sqlite.nodeNames())
        // Keys ordered byte by byte (0x80 after 0x7f), records kept once per key.
        let statements: [(key: [UInt8], record: [UInt8])] = [([0x80, 1], [1]), ([0x7F], [2]), ([0x00, 0xFF], [3])]
        #expect(try pg.addStatements(statements) == sqlite.addStatements(statements))
        #expect(try pg.addStatements(statements + [([0x81], [4])]) == 1)
        try sqlite.addStatements(statements + [([0x81], [4])])
        #expect(try pg.statementRecords() == sqlite.statementRecords())
        #expect(try pg.statementRecords() == [[3], [2], [1], [4]])
        // A relay's overrule of one of this replica's writes, as a peer's batch brings it.
        let item = ItemID.named("x")
        let create = ItemEdit.create(type: "t", assignments: [.set(.named("f"), .string("mine"))])
        try pg.apply(create, to: item, wallMilliseconds: 1_700_000_000_000)
        try sqlite.apply(create, to: item, wallMilliseconds: 1_700_000_000_000)
        #expect(try pg.changeStamp() == sqlite.changeStamp())
        let own = try #require(try pg.itemState(item)?.fields[.named("f")])
        var overruled = own
        overruled.overrule(
            rejecting: own.versions.map(\.dot),
            keeping: .null,
            reason: "too large",
            dot: Dot(node: .node(5), counter: 1),
            timestamp: HLCTimestamp(rawValue: 1 << 40)
        )
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: item, field: .named("f")), state: overruled)],
            covers: VersionVector([.node(5): 1])
        )
        try pg.apply(batch, wallMilliseconds: 1_700_000_000_001)
        #expect(try pg.ownRejections().map(\.reason) == ["too large"])
        #expect(try pg.ownRejections().first?.item == item)
        // The batch changed a field: one more transaction counted.
        #expect(try pg.changeStamp() == sqlite.changeStamp() + 1)
    }

    /// Settings and marks read back as written, as in the SQLite store; of two concurrent
    /// versions, the one that arrived first is the one the first-seen policy takes in both.
    @Test func settingsMarksAndFirstSeenAsInTheSQLiteStore() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dir = makeTemporaryDirectory("pg-settings")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pg = try Self.replica(server, schema: "settings")
        defer { pg.close() }
        let sqlite = try Self.sqlite(dir, "r")
        #expect(try pg.collectionSettings() == sqlite.collectionSettings())
        let settings = CollectionSettings(
            trashWindow: 3 * CollectionSettings.day,
            awayAfter: 40 * CollectionSettings.day
        )
        try pg.setCollectionSettings(settings)
        try sqlite.setCollectionSettings(settings)
        #expect(try pg.collectionSettings() == settings)
        #expect(try pg.relayID() == nil && sqlite.relayID() == nil)
        try pg.noteRelay(.node(9))
        try pg.noteRelay(.node(8))
        #expect(try pg.relayID() == .node(8))
        #expect(try pg.rejoinedAt() == sqlite.rejoinedAt())
        #expect(try pg.announcedVectors().vector == pg.versionVector())
        // A local write, then a concurrent one from a peer: the local one arrived first.
        let item = ItemID.named("y")
        let local = try pg.apply(
            .create(type: "t", assignments: [.set(.named("f"), .string("here"))]),
            to: item,
            wallMilliseconds: 1_700_000_000_000
        )
        let sqliteLocal = try sqlite.apply(
            .create(type: "t", assignments: [.set(.named("f"), .string("here"))]),
            to: item,
            wallMilliseconds: 1_700_000_000_000
        )
        var theirs = FieldState()
        let remote = Dot(node: .node(6), counter: 1)
        theirs.assign(.string("there"), dot: remote, timestamp: HLCTimestamp(rawValue: 1 << 41))
        let batch = DeltaBatch(
            updates: [FieldUpdate(key: FieldKey(item: item, field: .named("f")), state: theirs)],
            covers: VersionVector([.node(6): 1])
        )
        try pg.apply(batch, wallMilliseconds: 1_700_000_000_001)
        try sqlite.apply(batch, wallMilliseconds: 1_700_000_000_001)
        #expect(try pg.conflicts().count == 1 && sqlite.conflicts().count == 1)
        #expect(try pg.firstSeen([remote, local], item: item, field: .named("f")) == local)
        #expect(try sqlite.firstSeen([remote, sqliteLocal], item: item, field: .named("f")) == sqliteLocal)
        #expect(try pg.firstSeen([remote], item: item, field: .named("f")) == remote)
        #expect(try pg.firstSeen([Dot(node: .node(7), counter: 1)], item: item, field: .named("f")) == nil)
    }

    @Test func aReplicaIsMadeOnceAndOpenedByName() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let location = try PostgresLocation(parsing: server.uri)
        let made = try Self.replica(server, schema: "relay")
        defer { made.close() }
        #expect(throws: StoreError.alreadyInitialised(directory: "PostgreSQL schema relay")) {
            try Self.replica(server, schema: "relay")
        }
        #expect(throws: StoreError.notInitialised(directory: "PostgreSQL schema other")) {
            try PostgresReplica.open(at: location, schema: "other", logger: Self.logger)
        }
        #expect(throws: StoreError.self) {
            try PostgresReplica.open(at: location, schema: "Relay; DROP", logger: Self.logger)
        }
        let item = ItemID.named("shared")
        try made.apply(
            .create(type: "note", assignments: [.set(.named("title"), .string("one"))]),
            to: item,
            wallMilliseconds: 1
        )
        let opened = try PostgresReplica.open(at: location, schema: "relay", logger: Self.logger)
        defer { opened.close() }
        #expect(try opened.info() == made.info())
        #expect(try opened.info().nodeID == .node(1))
        #expect(try opened.itemState(item)?.shownFields[.named("title")] == .string("one"))
        // The second connection's edit follows the first's: the next dot, whoever writes.
        let dot = try opened.apply(.update([.set(.named("title"), .string("two"))]), to: item, wallMilliseconds: 2)
        #expect(dot == Dot(node: .node(1), counter: 2))
        #expect(try made.itemState(item)?.shownFields[.named("title")] == .string("two"))
        #expect(try made.writers().map(\.id) == [.node(1)])
    }

    /// Processes writing one replica at once take turns: every dot is issued once, and the
    /// feed numbers every field change once, in commit order.
    @Test func writersOnOneReplicaTakeTurns() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let location = try PostgresLocation(parsing: server.uri)
        try Self.replica(server, schema: "shared").close()
        let (writers, edits) = (4, 25)
        let dots = Mutex<[Dot]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { w in
            do {
                let replica = try PostgresReplica.open(at: location, schema: "shared", logger: Self.logger)
                defer { replica.close() }
                for e in 0..<edits {
                    let dot = try replica.apply(
                        .create(type: "task", assignments: [.set(.named("n"), .integer(Int64(e)))]),
                        to: .named("w\(w)-\(e)"),
                        wallMilliseconds: 1_700_000_000_000
                    )
                    dots.withLock { $0.append(dot) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let issued = dots.withLock { $0 }
        #expect(Set(issued).count == writers * edits, "a dot was issued twice")
        #expect(Set(issued.map(\.counter)) == Set(1...UInt64(writers * edits)))
        let replica = try PostgresReplica.open(at: location, schema: "shared", logger: Self.logger)
        defer { replica.close() }
        #expect(try replica.versionVector()[.node(1)] == UInt64(writers * edits))
        let seqs = try replica.database.statements { db in
            try db.run("SELECT seq FROM field ORDER BY seq").map { try $0.decode(Int64.self) }
        }
        // Each new item writes `_type` and `n`: two numbers per edit, none given twice.
        #expect(seqs == Array(1...Int64(2 * writers * edits)))
        #expect(try replica.counts().items == writers * edits)
    }

    /// Connections go to the first host of a location's that answers, as libpq's do; when none
    /// does, the failure names each host.
    @Test func aLocationsHostsAreTriedInOrder() throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        let dead = TemporaryPostgres.freePort()
        let location = try PostgresLocation(
            parsing:
                "postgres://lansync@127.0.0.1:\(dead),127.0.0.1:\(server.port)/postgres?sslmode=disable&connect_timeout=5"
        )
        let connector = PostgresConnector(location: location, logger: Self.logger)
        let connection = try connector.connect(id: 1).wait()
        defer { try? connection.close().wait() }
        let port = try connection.query("SELECT current_setting('port')", logger: Self.logger).wait().rows.first?
            .decode(String.self)
        #expect(port == String(server.port))
        let nowhere = try PostgresLocation(
            parsing: "postgres://lansync@127.0.0.1:\(dead),127.0.0.1:\(dead)/postgres?sslmode=disable&connect_timeout=5"
        )
        do {
            let connection = try PostgresConnector(location: nowhere, logger: Self.logger).connect(id: 2).wait()
            try connection.close().wait()
            Issue.record("connected to a port nothing listens on")
        } catch {
            #expect("\(error)".components(separatedBy: "127.0.0.1:\(dead):").count == 3, "\(error)")
        }
    }
}
