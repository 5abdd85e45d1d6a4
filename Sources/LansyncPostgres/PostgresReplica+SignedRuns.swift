public import LansyncCore
public import LansyncReplica
import NIOCore
import PostgresNIO

// The signed runs of writes the replica holds (Docs/SECURITY.md, "Signed writes").
extension PostgresReplica {
    /// The signed runs held, of `writer` only if given, by writer and first dot.
    public func signedRuns(of writer: NodeID? = nil) throws(StoreError) -> [SignedRun] {
        try guarded {
            try database.statements { db in
                try db.run(
                    """
                    SELECT node_id, first, last, key, signature FROM signed_run
                    WHERE \(writer?.text)::text IS NULL OR node_id = \(writer?.text) ORDER BY node_id, first
                    """
                ).compactMap { row -> SignedRun? in
                    let (node, first, last, key, signature) = try row.decode(
                        (String, Int64, Int64, ByteBuffer, ByteBuffer).self
                    )
                    guard let writer = NodeID(text: node) else { return nil }
                    return SignedRun(
                        writer: writer,
                        first: UInt64(clamping: first),
                        last: UInt64(clamping: last),
                        key: Array(key.readableBytesView),
                        signature: Array(signature.readableBytesView)
                    )
                }
            }
        }
    }
}

extension PostgresReplica {
    /// Signs the replica's own writes it holds unsigned, once (``HeldWriteSigning``), in one
    /// transaction; how many versions it signed.
    @discardableResult
    public func signHeldOwnWrites() throws(StoreError) -> Int {
        try guarded {
            try database.transaction(write: true) { db in
                var rows = PostgresRows(tx: try PostgresWrite(db, origin: .local), signer: signing.current)
                let signed = try HeldWriteSigning.signHeldOwnWrites(in: &rows)
                try rows.tx.finish()
                return signed
            }
        }
    }
}

extension PostgresRows: HeldWriteRows {
    func ownNode() throws -> NodeID {
        guard
            let id = try tx.db.value("SELECT value FROM meta WHERE key = 'node_id'", as: String.self)
                .flatMap(NodeID.init(text:))
        else { throw PostgresProblem("table meta holds no valid node_id") }
        return id
    }

    func signedRanges(ofWriterRow row: Int64) throws -> [ClosedRange<UInt64>] {
        try tx.db.run(
            "SELECT r.first, r.last FROM signed_run r JOIN node n ON n.node_id = r.node_id WHERE n.id = \(row)"
        ).compactMap { range in
            let (first, last) = try range.decode((Int64, Int64).self)
            let (low, high) = (UInt64(clamping: first), UInt64(clamping: last))
            return low <= high ? low...high : nil
        }
    }

    func ownWritesSigned() throws -> Bool {
        try tx.db.value("SELECT value FROM meta WHERE key = 'own_writes_signed'", as: String.self) != nil
    }

    func markOwnWritesSigned() throws { try PostgresReplica.setMeta("own_writes_signed", "1", tx.db) }
}

extension PostgresWrite {
    /// Keeps the leaves of versions the replica drops (superseded, or collected) where a held run
    /// of `writer` covers them: the run's other versions stay provable (``RunProofs``).
    func keepGone(_ leaves: [RunLeaf], of writer: NodeID) throws {
        for leaf in leaves {
            try db.run(
                """
                INSERT INTO run_leaf (node_id, counter, field, digest)
                SELECT \(writer.text), \(bigint: leaf.counter), \(leaf.field.rawValue), \(ByteBuffer(bytes: leaf.digest.bytes))
                WHERE (SELECT last FROM signed_run WHERE node_id = \(writer.text) AND first <= \(bigint: leaf.counter)
                    ORDER BY first DESC LIMIT 1) >= \(bigint: leaf.counter)
                ON CONFLICT DO NOTHING
                """
            )
        }
    }

    /// For the versions of field `name` of `item` that collection or purge just dropped (their
    /// version rows gone): a run that still has a live version keeps their digests
    /// (``keepGone(_:of:)``), so it can still prove the rest; one left with none lets all of
    /// its digests go, which no proof needs any more (the run itself stays, for `history`).
    func keepCollected(_ state: FieldState?, item: ItemID, field name: FieldName) throws {
        for version in state?.versions ?? [] {
            let writer = version.dot.node.text
            let counter = version.dot.counter
            guard
                let run = try db.run(
                    """
                    SELECT first, last FROM signed_run WHERE node_id = \(writer) AND first <= \(bigint: counter)
                    ORDER BY first DESC LIMIT 1
                    """
                ).first.map({ try $0.decode((Int64, Int64).self) }),
                run.1 >= Int64(clamping: counter)
            else { continue }
            let live =
                try db.value(
                    """
                    SELECT EXISTS (SELECT 1 FROM version v JOIN node n ON n.id = v.node
                        WHERE n.node_id = \(writer) AND v.counter BETWEEN \(run.0) AND \(run.1))
                    """,
                    as: Bool.self
                ) ?? false
            if live {
                try keepGone([RunLeaf(item: item, field: name, version: version)], of: version.dot.node)
            } else {
                try db.run(
                    "DELETE FROM run_leaf WHERE node_id = \(writer) AND counter BETWEEN \(run.0) AND \(run.1)"
                )
            }
        }
    }
}
