import Foundation
public import LansyncCore
public import LansyncReplica
import PostgresNIO

// Retired writers fold (Docs/MERGE.md, "Retired writers fold"), as in the SQLite store: the
// writers this replica leaves out of the vectors it tells, in meta `folded` (a version vector in
// the core's encoding, base64). Table `node` keeps every writer and its counter: folding changes
// what travels, not what is merged.
extension PostgresReplica {
    /// The writers this replica folded, and up to where.
    public func foldedWriters() throws(StoreError) -> VersionVector {
        try guarded { try database.statements { db in try Self.folded(db) } }
    }

    static func folded(_ db: BlockingPostgres.Statements) throws -> VersionVector {
        guard let text = try db.value("SELECT value FROM meta WHERE key = 'folded'", as: String.self),
            let bytes = Data(base64Encoded: text)
        else { return VersionVector() }
        var reader = ByteReader(Array(bytes))
        return (try? reader.versionVector()) ?? VersionVector()
    }

    static func setFolded(_ folded: VersionVector, _ db: BlockingPostgres.Statements) throws {
        try setMeta("folded", Data(ReplicaConstants.encoded(folded)).base64EncodedString(), db)
    }

    /// What a hello tells, read in one snapshot so the folded set is covered by the vector.
    public func announcedVectors() throws(StoreError) -> (vector: VersionVector, folded: VersionVector) {
        try guarded {
            try database.transaction(snapshot: true) { db in (try Self.versionVector(db), try Self.folded(db)) }
        }
    }

    /// Folds the writers this replica knows are retired once the stability ledger's stable vector
    /// reaches their counters (``LansyncCore/WriterFolding/retirement(node:current:own:revoked:vector:unchangedSince:)``);
    /// what it folded now, and the vector it read.
    @discardableResult
    public func foldRetiredWriters(
        revoked: RevokedWriters,
        unchangedSince previous: VersionVector?
    ) throws(StoreError) -> (folded: VersionVector, vector: VersionVector) {
        try guarded {
            try database.transaction(write: true) { db in
                let tx = try PostgresWrite(db, origin: .local)
                let node = try Self.info(db).nodeID
                let current = try tx.currentWriter()
                let folded = try Self.folded(db)
                let vector = try Self.versionVector(db)
                let now = WriterFolding.folds(
                    vector: vector,
                    stable: try Self.ledger(db).stable,
                    folded: folded,
                    isRetired: WriterFolding.retirement(
                        node: node,
                        current: current,
                        own: Set(try Self.writerIDs(db)),
                        revoked: revoked,
                        vector: vector,
                        unchangedSince: previous
                    )
                )
                if !now.isEmpty { try Self.setFolded(folded.joined(with: now), db) }
                return (now, vector)
            }
        }
    }

    /// Takes the entries of a peer's folded set that this replica's vector covers; returns them.
    @discardableResult
    public func adoptFolds(_ peerFolded: VersionVector) throws(StoreError) -> VersionVector {
        guard !peerFolded.isEmpty else { return VersionVector() }
        return try guarded {
            // Most hellos bring nothing new: a read decides, and only news takes the write lock.
            let news = try database.transaction(snapshot: true) { db in
                !WriterFolding.adoptable(peerFolded, vector: try Self.versionVector(db), folded: try Self.folded(db))
                    .isEmpty
            }
            guard news else { return VersionVector() }
            return try database.transaction(write: true) { db in
                _ = try PostgresWrite(db, origin: .local)
                let folded = try Self.folded(db)
                let taken = WriterFolding.adoptable(peerFolded, vector: try Self.versionVector(db), folded: folded)
                if !taken.isEmpty { try Self.setFolded(folded.joined(with: taken), db) }
                return taken
            }
        }
    }
}
