package import LansyncCore

/// What a backend's write transaction gives the signing of a replica's own unsigned writes
/// (``HeldWriteSigning``): the runs it holds of a writer, and a mark that the pass was made.
package protocol HeldWriteRows: MergeRows, VersionIndexReading {
    /// The replica's node id (its writers' ids start with it).
    mutating func ownNode() throws -> NodeID
    /// The counters of the signed runs held of the writer in node row `row`.
    mutating func signedRanges(ofWriterRow row: Int64) throws -> [ClosedRange<UInt64>]
    /// Whether the pass was made on this replica (meta `own_writes_signed`).
    mutating func ownWritesSigned() throws -> Bool
    /// Marks the pass made.
    mutating func markOwnWritesSigned() throws
}

/// A replica's own writes made before it could sign (by a lansync before protocol 1.14, on this
/// replica's file), signed once its member's key is there, in one pass, the same way in every
/// store (Docs/SECURITY.md, "Requiring signed writes"): where the cluster requires signed
/// writes, its writes that the authority had not seen when it required them would be refused.
///
/// Only live versions can be signed (a superseded one is gone, and is no longer sent); a run
/// ends at each counter whose writes are all gone.
package enum HeldWriteSigning {
    /// Signs every live version of the replica's own writers not in a signed run, once (the
    /// replica is marked when done; later writes are signed as they are made); how many
    /// versions it signed. Nothing without a signer: the pass waits for one.
    package static func signHeldOwnWrites<Rows: HeldWriteRows>(in rows: inout Rows) throws -> Int {
        guard rows.signer != nil, try !rows.ownWritesSigned() else { return 0 }
        let node = try rows.ownNode()
        var log = RunLog()
        var signed = 0
        for writer in try rows.writerRows() where writer.id.isWriter(of: node) {
            let ranges = try rows.signedRanges(ofWriterRow: writer.row)
            let isSigned = { (counter: UInt64) in ranges.contains { $0.contains(counter) } }
            let unsigned = try rows.indexedVersions(ofWriterRow: writer.row).filter { !isSigned($0.counter) }
            guard !unsigned.isEmpty else { continue }
            for key in try rows.fieldKeys(ofRows: Set(unsigned.map(\.field))) {
                guard let item = try rows.findItem(key.item),
                    let field = try rows.loadField(item: item.row, name: key.field)
                else { continue }
                for version in field.state.versions
                where version.dot.node == writer.id && !isSigned(version.dot.counter) {
                    log.note(version.dot, item: key.item, field: key.field, in: field.state)
                    signed += 1
                }
            }
        }
        try rows.sign(log)
        try rows.markOwnWritesSigned()
        return signed
    }
}
