import Foundation
import GRDB
public import LansyncCore

// Retired writers fold (Docs/MERGE.md, "Retired writers fold"): the writers this replica leaves
// out of the vectors it tells, in meta 'folded' (a binary version vector, base64). The `node`
// table keeps every writer and its counter: folding changes what travels, not what is merged.
extension ReplicaStore {
    /// The writers this replica folded, and up to where.
    public func foldedWriters() throws(StoreError) -> VersionVector {
        try read { db in try Self.folded(db: db) }
    }

    static func folded(db: Database) throws -> VersionVector {
        guard let text = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'folded'"),
            let blob = Data(base64Encoded: text)
        else { return VersionVector() }
        var r = ByteReader(Array(blob))
        return (try? r.versionVector()) ?? VersionVector()
    }

    /// What a hello tells, read in one transaction so the folded set is covered by the vector:
    /// the version vector (whole: the session leaves the folded writers out) and the folds.
    public func announcedVectors() throws(StoreError) -> (vector: VersionVector, folded: VersionVector) {
        try read { db in (try Self.versionVector(db: db), try Self.folded(db: db)) }
    }

    /// Folds the writers this replica knows are retired once the stability ledger's stable vector
    /// reaches their counters (``WriterFolding/folds(vector:stable:folded:isRetired:)``): every
    /// writer of its own node but the current one, and every writer of a member revoked
    /// (`revoked`) or forgotten (`lansync members forget`). Returns what it folded now.
    @discardableResult
    public func foldRetiredWriters(revoked: RevokedWriters = RevokedWriters()) throws(StoreError) -> VersionVector {
        try guarded {
            try write { tx, _ in
                let db = tx.db
                let node = try Transaction.nodeID(db: db)
                let current = try Transaction.currentWriter(db: db)
                let own = Set(try Self.ownWriters(db: db))
                let forgotten = try Self.memberReports(db: db).filter { $0.forgottenAt != nil }.map(\.nodeID)
                let folded = try Self.folded(db: db)
                let now = WriterFolding.folds(
                    vector: try Self.versionVector(db: db),
                    stable: try Self.ledger(db: db).stable,
                    folded: folded
                ) { writer in
                    guard writer != current else { return false }
                    return own.contains(writer) || writer.isWriter(of: node) || revoked.names(writer)
                        || forgotten.contains { writer == $0 || writer.isWriter(of: $0) }
                }
                guard !now.isEmpty else { return .rollback(now) }
                try tx.setMeta("folded", Self.encoded(folded.joined(with: now)))
                return .commit(now)
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
            let (vector, folded) = try pool.read { db in (try Self.versionVector(db: db), try Self.folded(db: db)) }
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
                try tx.setMeta("folded", Self.encoded(folded.joined(with: taken)))
                return .commit(taken)
            }
        }
    }

    static func encoded(_ vector: VersionVector) -> String {
        var w = ByteWriter()
        w.versionVector(vector)
        return Data(w.bytes).base64EncodedString()
    }
}
