public import LansyncCore

/// The numbers and encodings every backend of a replica keeps alike, so that a replica moved
/// from one to another (a relay from SQLite to PostgreSQL, a backup put back) reads the same.
public enum ReplicaConstants {
    /// Versions kept per field in `history` unless `init --history` says otherwise.
    public static let defaultHistoryLimit = 1000

    /// At most this many members' reports travel in one hello, and are taken from one.
    public static let maxGossipedReports = 512

    /// A floor no restored or rebuilt replica's feed numbering can have reached: a thousand
    /// numbers for every millisecond since 1970 (a replica would need a thousand changes a
    /// millisecond, for decades, to catch up).
    public static var changeSequenceFloor: UInt64 { WallClock.milliseconds * 1000 }

    /// A version vector as a replica's meta rows keep it (the writers it folded).
    public static func encoded(_ vector: VersionVector) -> [UInt8] {
        var w = ByteWriter()
        w.versionVector(vector)
        return w.bytes
    }
}
