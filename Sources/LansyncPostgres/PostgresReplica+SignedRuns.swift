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
