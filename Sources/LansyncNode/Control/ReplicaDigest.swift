import Crypto
import LansyncCore
import LansyncJSON
public import LansyncStore
import NIOConcurrencyHelpers

/// A digest of what a replica shows: every live item with its type, shown values and open
/// conflicts, and every deleted item by its id, in id order. Replicas that have converged have equal digests;
/// internal details (dots, history, who wrote what) do not enter it.
public enum ReplicaDigest {
    public static func compute(_ store: ReplicaStore) throws(StoreError) -> String {
        var hasher = SHA256()
        try store.forEachItem(includeDeleted: true) { item in
            // A deleted item counts by its id alone: what else it holds is collected at different
            // moments on different replicas, and a replica that joins later never had it.
            guard !item.deleted else {
                hasher.update(data: Array((item.id.rawValue + "\u{1}deleted\n").utf8))
                return
            }
            var line = item.id.rawValue + "\u{1}" + item.type + "\u{1}0"
            for field in item.fields { line += "\u{1}" + field.name.rawValue + "\u{2}" + field.value.jsonText }
            line += "\u{1}" + item.conflicts.map(\.rawValue).joined(separator: "\u{2}") + "\n"
            hasher.update(data: Array(line.utf8))
        }
        return hasher.finalize().prefix(16).map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        }.joined()
    }

    /// The last digest a running node computed, with the replica's change stamp then
    /// (``ReplicaStore/changeStamp()``, bumped by every transaction that changes a field): an
    /// unchanged stamp means an unchanged digest, so `status` on a replica of 100,000 items
    /// answers in milliseconds instead of re-reading every item. (The version vector is no such
    /// key: a stream's batches change fields before it moves.)
    public final class Cache: Sendable {
        private let last = NIOLockedValueBox<(UInt64, String)?>(nil)

        public init() {}

        public func digest(_ store: ReplicaStore) throws(StoreError) -> String {
            let before = try store.changeStamp()
            if let (stamp, digest) = last.withLockedValue({ $0 }), stamp == before { return digest }
            let digest = try ReplicaDigest.compute(store)
            // Cached only if nothing arrived while it was computed.
            if try store.changeStamp() == before { last.withLockedValue { $0 = (before, digest) } }
            return digest
        }
    }
}
