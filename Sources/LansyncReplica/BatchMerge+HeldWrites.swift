package import LansyncCore

/// The version index as a revocation reads it: which of a replica's live versions a writer wrote.
/// Each backend gives these look-ups in its SQL; which fields hold a refused write, and how they
/// are overruled, is decided once (``BatchMerge/overruleHeldWrites(in:)``).
package protocol VersionIndexReading {
    /// Every writer the replica knows of, by node row.
    mutating func writerRows() throws -> [(row: Int64, id: NodeID)]
    /// The live versions the writer in node row `row` wrote: each one's counter and field row.
    mutating func indexedVersions(ofWriterRow row: Int64) throws -> [(counter: UInt64, field: Int64)]
    /// The fields in `rows`, by item and name, in the order of their rows.
    mutating func fieldKeys(ofRows rows: Set<Int64>) throws -> [FieldKey]
}

extension VersionIndexReading {
    /// The fields holding a live version that `revoked` refuses, found through the version index:
    /// the versions of the revoked nodes' writers beyond their cut.
    package mutating func fields(withWritesRefusedBy revoked: RevokedWriters) throws -> [FieldKey] {
        var fieldRows = Set<Int64>()
        for writer in try writerRows() where revoked.names(writer.id) {
            for version in try indexedVersions(ofWriterRow: writer.row)
            where revoked.refusal(of: Dot(node: writer.id, counter: version.counter)) != nil {
                fieldRows.insert(version.field)
            }
        }
        return fieldRows.isEmpty ? [] : try fieldKeys(ofRows: fieldRows)
    }
}

extension BatchMerge where Rows: VersionIndexReading {
    /// Overrules every write the replica holds that ``revoked`` refuses (a replica that has just
    /// learned a revocation took in writes of the revoked node that came after its cut), then
    /// ``finish(in:)``; how many fields and items it overruled or deleted. (A list element whose
    /// own version a later write superseded is found when that field next merges something.)
    package mutating func overruleHeldWrites(in rows: inout Rows) throws -> Int {
        guard !revoked.isEmpty else { return 0 }
        for key in try rows.fields(withWritesRefusedBy: revoked) {
            try overruleHeld(key.item, field: key.field, in: &rows)
        }
        try finish(in: &rows)
        return changed
    }
}

extension BatchMerge where Rows: VersionIndexReading {
    /// ``overruleHeldWrites(in:)`` for `revoked` at `wallMilliseconds`, in a merge of its own:
    /// how many fields and items it overruled or deleted, and the writer it claimed for its
    /// overrules (nil if it wrote none).
    package static func overrule(
        _ revoked: RevokedWriters,
        at wallMilliseconds: UInt64,
        in rows: inout Rows
    ) throws -> (changed: Int, writer: ClaimedWriter?) {
        var merge = BatchMerge(revoked: revoked, wallMilliseconds: wallMilliseconds)
        let changed = try merge.overruleHeldWrites(in: &rows)
        return (changed, merge.writer)
    }
}
