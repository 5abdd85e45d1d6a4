import Foundation
import LansyncCore
import LansyncReplica
import LansyncStore
import LansyncTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import LansyncNode

/// A delta's opening read is shared by the sessions that ask for the same one in the same
/// generation of the replica, and by no one else: not by a session that heard of a later change
/// (it could predate it), not by one whose peer stands elsewhere.
@Suite struct DeltaStartsTests {
    /// A replica with a few items, and the opening read of a delta for an empty peer, counted.
    struct Fixture {
        let dir: String
        let store: ReplicaStore
        let reads = NIOLockedValueBox(0)

        init() throws {
            dir = makeTemporaryDirectory("delta-starts")
            store = try SessionRunnerTests.store(dir, "a", node: .node(1), cluster: .node(900))
            try store.apply(
                (0..<5).map {
                    (ItemID.named("i\($0)"), .create(type: "t", assignments: [.set(.named("v"), .integer(Int64($0)))]))
                },
                wallMilliseconds: 1_700_000_000_000
            )
        }

        /// Reads the delta for `request` from the replica, after `gate` (if any) lets it.
        func read(
            _ request: DeltaStarts.Request,
            gate: AsyncStream<Void>? = nil
        ) -> @Sendable () async throws -> DeltaStarts.Start {
            { [store, reads] in
                if let gate { for await _ in gate { break } }
                reads.withLockedValue { $0 += 1 }
                var stream = try store.deltaStream(for: request.peer, unclaimed: request.initial)
                let batch = try stream.next()
                return DeltaStarts.Start(stream: stream, size: batch?.updates.count ?? 0, ahead: [batch])
            }
        }
    }

    static func request(generation: UInt64, peer: VersionVector = VersionVector()) -> DeltaStarts.Request {
        DeltaStarts.Request(generation: generation, initial: false, announce: true, peer: peer, deltaBase: peer)
    }

    @Test func theSameRequestReadsOnce() async throws {
        let f = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let starts = DeltaStarts()
        let request = Self.request(generation: 3)
        let (first, firstShared) = try await starts.start(request, read: f.read(request))
        // Built apart, equal: another session whose peer stands at the same point.
        let (second, secondShared) = try await starts.start(Self.request(generation: 3), read: f.read(request))
        #expect(!firstShared && secondShared)
        #expect(f.reads.withLockedValue { $0 } == 1)
        // Five items of two fields (the type and `v`).
        #expect(first.size == 10 && second.size == 10)
        #expect(second.ahead == first.ahead)
        #expect(starts.tally.reads == 2 && starts.tally.shared == 1)
    }

    @Test func aRequestWhileTheReadRunsWaitsForIt() async throws {
        let f = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let starts = DeltaStarts()
        let request = Self.request(generation: 1)
        let (gate, open) = AsyncStream<Void>.makeStream()
        async let first = starts.start(request, read: f.read(request, gate: gate))
        // The first read is held at its gate: the second request finds it started, and waits.
        while starts.tally.reads == 0 { try await Task.sleep(for: .milliseconds(1)) }
        async let second = starts.start(request, read: f.read(request))
        while starts.tally.reads < 2 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(f.reads.withLockedValue { $0 } == 0)
        open.yield()
        let (a, b) = try await (first, second)
        #expect(!a.shared && b.shared)
        #expect(f.reads.withLockedValue { $0 } == 1)
        #expect(a.start.ahead == b.start.ahead)
    }

    @Test func aLaterGenerationOrAnotherPeerReadsForItself() async throws {
        let f = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let starts = DeltaStarts()
        let request = Self.request(generation: 1)
        _ = try await starts.start(request, read: f.read(request))
        // A change announced since: the replica may hold more than that read saw.
        let later = Self.request(generation: 2)
        let (_, laterShared) = try await starts.start(later, read: f.read(later))
        // A peer that holds some of it: its delta is another one.
        let writer = try #require(f.store.versionVector().counters.keys.first)
        let elsewhere = Self.request(generation: 2, peer: VersionVector([writer: 2]))
        let (held, elsewhereShared) = try await starts.start(elsewhere, read: f.read(elsewhere))
        #expect(!laterShared && !elsewhereShared)
        #expect(f.reads.withLockedValue { $0 } == 3)
        #expect(held.size == 6, "the peer holds two of the five items: three to send, two fields each")
        // The older generation's read is gone: a session still on it reads for itself.
        let (_, olderShared) = try await starts.start(request, read: f.read(request))
        #expect(!olderShared)
    }

    @Test func aFailedReadIsNotHandedOut() async throws {
        let f = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let starts = DeltaStarts()
        let request = Self.request(generation: 1)
        struct Broken: Error {}
        await #expect(throws: Broken.self) {
            _ = try await starts.start(request) { throw Broken() }
        }
        // The same request again: it reads, and gets the delta.
        let (again, shared) = try await starts.start(request, read: f.read(request))
        #expect(!shared && again.size == 10)
        #expect(f.reads.withLockedValue { $0 } == 1)
    }

    @Test func aSessionOnAnOlderGenerationKeepsNothingFromTheNewer() async throws {
        let f = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: f.dir) }
        let starts = DeltaStarts()
        let newer = Self.request(generation: 5)
        _ = try await starts.start(newer, read: f.read(newer))
        // More sessions still on generation 4, each at another point, than reads are kept.
        let writer = try #require(f.store.versionVector().counters.keys.first)
        for held in 1...(DeltaStarts.kept + 1) {
            let older = Self.request(generation: 4, peer: VersionVector([writer: UInt64(held)]))
            let (_, shared) = try await starts.start(older, read: f.read(older))
            #expect(!shared)
        }
        let (_, shared) = try await starts.start(newer, read: f.read(newer))
        #expect(shared, "the newer generation's read is still there")
    }
}
