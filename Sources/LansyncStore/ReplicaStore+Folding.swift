import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Retired writers fold (Docs/MERGE.md, "Retired writers fold"): the writers this replica leaves
// out of the vectors it tells, in meta 'folded' (a binary version vector, base64). The `node`
// table keeps every writer and its counter: folding changes what travels, not what is merged.
extension ReplicaStore {
    /// The writers this replica folded, and up to where.
    public func foldedWriters() throws(StoreError) -> VersionVector {
        try read { db in try Self.folded(db: db) }
    }

    static func folded(db: Database) throws -> VersionVector {
        guard let bytes = try Transaction.metaBytes("folded", db: db) else { return VersionVector() }
        var r = ByteReader(bytes)
        return (try? r.versionVector()) ?? VersionVector()
    }

    /// What a hello tells, read in one transaction so the folded set is covered by the vector:
    /// the version vector (whole: the session leaves the folded writers out) and the folds.
    public func announcedVectors() throws(StoreError) -> (vector: VersionVector, folded: VersionVector) {
        try read { db in (try Self.versionVector(db: db), try Self.folded(db: db)) }
    }

    /// Folds the writers this replica knows are retired once the stability ledger's stable vector
    /// reaches their counters (``WriterFolding/folds(vector:stable:folded:isRetired:)``): every
    /// writer of its own node but the current one, and every writer of a revoked member. A
    /// writer whose counter moved since `previous` (the vector as the last round read it) waits
    /// for a quiet round: one thought retired that still writes (a directory copied and used in
    /// two places) then folds only when it pauses, not at every round. (A forgotten member's
    /// writers do not fold: forgetting is this machine's judgement, and the member may still be
    /// writing elsewhere.) Returns what it folded now, and the vector it read.
    @discardableResult
    public func foldRetiredWriters(
        revoked: RevokedWriters = RevokedWriters(),
        unchangedSince previous: VersionVector? = nil
    ) throws(StoreError) -> (folded: VersionVector, vector: VersionVector) {
        try guarded {
            try write { tx, _ in
                let db = tx.db
                let node = try Transaction.nodeID(db: db)
                let current = try Transaction.currentWriter(db: db)
                let own = Set(try Self.ownWriters(db: db))
                let folded = try Self.folded(db: db)
                let vector = try Self.versionVector(db: db)
                let now = WriterFolding.folds(
                    vector: vector,
                    stable: try Self.ledger(db: db).stable,
                    folded: folded,
                    isRetired: WriterFolding.retirement(
                        node: node,
                        current: current,
                        own: own,
                        revoked: revoked,
                        vector: vector,
                        unchangedSince: previous
                    )
                )
                guard !now.isEmpty else { return .rollback((now, vector)) }
                try tx.setMeta("folded", bytes: ReplicaConstants.encoded(folded.joined(with: now)))
                return .commit((now, vector))
            }
        }
    }

    /// Takes the entries of a peer's folded set that this replica's vector covers
    /// (``WriterFolding/adoptable(_:vector:folded:)``); returns them.
    @discardableResult
    public func adoptFolds(_ peerFolded: VersionVector) throws(StoreError) -> VersionVector {
        guard !peerFolded.isEmpty else { return VersionVector() }
        return try guarded {
            // Most hellos bring nothing new: a read decides, and only news takes the write lock.
            let (vector, folded) = try database.read { db in (try Self.versionVector(db: db), try Self.folded(db: db)) }
            guard !WriterFolding.adoptable(peerFolded, vector: vector, folded: folded).isEmpty else {
                return VersionVector()
            }
            return try write { tx, _ in
                let folded = try Self.folded(db: tx.db)
                let taken = WriterFolding.adoptable(
                    peerFolded,
                    vector: try Self.versionVector(db: tx.db),
                    folded: folded
                )
                guard !taken.isEmpty else { return .rollback(taken) }
                try tx.setMeta("folded", bytes: ReplicaConstants.encoded(folded.joined(with: taken)))
                return .commit(taken)
            }
        }
    }
}
