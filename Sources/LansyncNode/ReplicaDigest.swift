import Crypto
public import LansyncStore

/// A digest of what a replica shows: every item (deleted ones too) with its type, tombstone, shown
/// values and open conflicts, in id order. Replicas that have converged have equal digests;
/// internal details (dots, history, who wrote what) do not enter it.
public enum ReplicaDigest {
    public static func compute(_ store: ReplicaStore) throws(StoreError) -> String {
        var hasher = SHA256()
        try store.forEachItem(includeDeleted: true) { item in
            var line = item.id + "\u{1}" + item.type + "\u{1}" + (item.deleted ? "1" : "0")
            for field in item.fields { line += "\u{1}" + field.name + "\u{2}" + field.json }
            line += "\u{1}" + item.conflicts.joined(separator: "\u{2}") + "\n"
            hasher.update(data: Array(line.utf8))
        }
        return hasher.finalize().prefix(16).map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        }.joined()
    }
}
