import Crypto
import LansyncCore
import LansyncJSON
public import LansyncReplica
import Synchronization

/// A digest of what a replica shows: every live item with its type, shown values and open
/// conflicts, and every deleted item by its id. Replicas that have converged have equal digests;
/// internal details (dots, history, who wrote what) do not enter it.
///
/// It is the sum (modulo 2¹²⁸) of one hash per item, so it does not depend on the order items are
/// read in and a running node's ``Cache`` keeps it up to date by reading only the items changed
/// since it last looked.
public enum ReplicaDigest {
    public static func compute(_ store: any ReplicaStorage) throws(StoreError) -> String {
        var sum: UInt128 = 0
        try store.forEachItem(type: nil, includeDeleted: true, withLocalEdits: false) { item in sum &+= itemHash(item) }
        return hex(sum)
    }

    /// An item's share of the digest: the first 16 bytes of the SHA-256 of its line.
    static func itemHash(_ item: StoredItem) -> UInt128 {
        // A deleted item counts by its id alone: what else it holds is collected at different
        // moments on different replicas, and a replica that joins later never had it.
        let line: String
        if item.deleted {
            line = item.id.rawValue + "\u{1}deleted\n"
        } else {
            var text = item.id.rawValue + "\u{1}" + item.type + "\u{1}0"
            for field in item.fields { text += "\u{1}" + field.name.rawValue + "\u{2}" + field.value.jsonText }
            text += "\u{1}" + item.conflicts.map(\.rawValue).joined(separator: "\u{2}") + "\n"
            line = text
        }
        return SHA256.hash(data: Array(line.utf8)).withUnsafeBytes { bytes in
            bytes.prefix(16).reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
        }
    }

    static func hex(_ sum: UInt128) -> String {
        let text = String(sum, radix: 16)
        return String(repeating: "0", count: 32 - text.count) + text
    }

    /// A running node's digest, kept between `status` requests: each item's hash, and the
    /// replica's marks (``ReplicaMarks``) when they were taken. An unchanged stamp means an
    /// unchanged digest; otherwise only the items with a field changed since the last look are
    /// read again (one edit on a replica of 100,000 items: milliseconds, where reading every
    /// item takes seconds). When items went without a trace in the feed (a purge or a rejoin: the
    /// item count is not what the hashes hold, or the feed's floor moved), every item is read.
    public final class Cache: Sendable {
        private struct Held {
            var marks: ReplicaMarks
            var hashes: [ItemID: UInt128]
            var sum: UInt128
        }

        private let held = Mutex<Held?>(nil)
        /// How many items the last `digest` that read the replica read (for tests).
        let itemsRead = Mutex(0)

        public init() {}

        public func digest(_ store: any ReplicaStorage) throws(StoreError) -> String {
            // Under the lock throughout: two requests at once read the replica once.
            try held.withLock { (held: inout Held?) throws(StoreError) -> String in
                if let current = held, try store.changeStamp() == current.marks.stamp { return hex(current.sum) }
                if var next = held {
                    var changed: [(ItemID, UInt128)] = []
                    let marks = try store.forEachItem(changedAfter: next.marks.latestSeq) { item in
                        changed.append((item.id, itemHash(item)))
                    }
                    for (id, hash) in changed {
                        next.sum &-= next.hashes[id] ?? 0
                        next.sum &+= hash
                        next.hashes[id] = hash
                    }
                    next.marks = marks
                    itemsRead.withLock { $0 = changed.count }
                    if marks.floor == held?.marks.floor, marks.items == next.hashes.count {
                        held = next
                        return hex(next.sum)
                    }
                }
                var hashes: [ItemID: UInt128] = [:]
                var sum: UInt128 = 0
                let marks = try store.forEachItem(changedAfter: nil) { item in
                    let hash = itemHash(item)
                    hashes[item.id] = hash
                    sum &+= hash
                }
                held = Held(marks: marks, hashes: hashes, sum: sum)
                itemsRead.withLock { $0 = hashes.count }
                return hex(sum)
            }
        }
    }
}
