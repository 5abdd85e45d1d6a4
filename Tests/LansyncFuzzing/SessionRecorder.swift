import Foundation
import LansyncCore
public import LansyncIdentity
import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncWire
import NIOConcurrencyHelpers

/// Real sessions, recorded: a member with a replica of every kind of state (items, lists,
/// deletions, restores, conflicts, removed fields) meets a fresh node, both real `Node`s in
/// process, their frames passed in memory; what the member wrote is one seed of the fuzzer's
/// corpus, byte for byte what it would have written on its connection (issue 62: "a corpus
/// of real captured sessions").
public enum SessionRecorder {
    /// One recorded session per variant of the member's replica: the bytes it sent.
    /// The member is `member` in every one (its identity is the fuzzed peer's), its replica
    /// grown before each; each target is a fresh node.
    public static func record(
        in directory: String,
        cluster: ClusterSecret,
        member: InProcessNode,
        variants: Int = 4
    )
        async throws -> [[UInt8]]
    {
        var seeds: [[UInt8]] = []
        for variant in 0..<variants {
            try fill(member.store, variant: variant)
            let target = try InProcessNode(
                directory: directory + "/target-\(variant)",
                cluster: cluster,
                name: "target"
            )
            seeds.append(try await converse(member, with: target))
            await target.node.shutdownPools()
        }
        return seeds
    }

    /// Both sides' sessions at once, each side's sent messages fed to the other, until neither
    /// sends anything for a while; returns the member's frames.
    static func converse(_ member: InProcessNode, with target: InProcessNode) async throws -> [UInt8] {
        let (toMember, intoMember) = AsyncStream<[UInt8]>.makeStream()
        let (toTarget, intoTarget) = AsyncStream<[UInt8]>.makeStream()
        let recorded = NIOLockedValueBox<(bytes: [UInt8], last: ContinuousClock.Instant)>(([], .now))
        async let memberSide = member.node.session(inMemoryFrom: target.id, payloads: toMember) {
            message in
            let frame = Frame.encode(message)
            recorded.withLockedValue {
                $0.bytes += frame
                $0.last = .now
            }
            intoTarget.yield(Array(frame.dropFirst(4)))
        }
        async let targetSide = target.node.session(inMemoryFrom: member.id, payloads: toTarget) { message in
            recorded.withLockedValue { $0.last = .now }
            intoMember.yield(Array(Frame.encode(message).dropFirst(4)))
        }
        // Recorded once both went quiet: for 300 ms with the target holding every item the
        // member holds, or for 30 s whatever it holds; 120 s at most. Not a short quiet alone: a
        // loaded test process can pause a session for seconds (a CI run's recording ended after
        // the hello, and the fuzzer then had no batch to mutate).
        let start = ContinuousClock.now
        let goal = try member.store.counts().items
        while ContinuousClock.now - start < .seconds(120) {
            let quiet = ContinuousClock.now - recorded.withLockedValue({ $0.last })
            if quiet >= .seconds(30) { break }
            if quiet >= .milliseconds(300), (try? target.store.counts().items) == goal { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        intoMember.finish()
        intoTarget.finish()
        _ = await (memberSide, targetSide)
        return recorded.withLockedValue { $0.bytes }
    }

    /// Every kind of state a replica holds, a little more with each variant.
    static func fill(_ store: ReplicaStore, variant: Int) throws {
        let now: UInt64 = 1_700_000_000_000
        let count = 4 + variant * 40
        for i in 0..<count {
            let id = try ItemID("item-\(variant)-\(i)")
            _ = try store.apply(
                .create(
                    type: i % 3 == 0 ? "task" : "note",
                    assignments: [
                        .set(try FieldName("title"), .string("title \(i) \u{00E9}\u{4E2D}")),
                        .set(try FieldName("n"), .integer(Int64(i) - 3)),
                        .set(try FieldName("x"), .double(Double(i) / 7)),
                        .set(try FieldName("done"), .bool(i % 2 == 0)),
                        .set(try FieldName("tags"), .list([.string("a"), .integer(1), .null])),
                        .set(try FieldName("link"), .ref(try ItemID("item-\(variant)-0"))),
                    ]
                ),
                to: id,
                wallMilliseconds: now + UInt64(i)
            )
            if i % 4 == 1 {
                _ = try store.apply(
                    .update([.add(try FieldName("tags"), .string("b\(i)"))]),
                    to: id,
                    wallMilliseconds: now + 1000
                )
                _ = try store.apply(
                    .update([.remove(try FieldName("tags"), .string("a"))]),
                    to: id,
                    wallMilliseconds: now + 1001
                )
            }
            if i % 5 == 2 {
                _ = try store.apply(.update([.unset(try FieldName("x"))]), to: id, wallMilliseconds: now + 1002)
            }
            if i % 6 == 3 {
                _ = try store.apply(.delete, to: id, wallMilliseconds: now + 1003)
                if i % 12 == 3 { _ = try store.apply(.restore, to: id, wallMilliseconds: now + 1004) }
            }
        }
    }
}
