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
    /// replica is marked when done, and a replica made by this release starts marked; a commit
    /// of its own writes without their signature clears the mark); how many versions it signed.
    /// Nothing without a signer: the pass waits for one.
    ///
    /// A writer's versions are taken in the order of their dots, so runs are cut as they fill
    /// (``RunLog``): an upgraded replica of a million own versions holds a run's leaves at a time.
    package static func signHeldOwnWrites<Rows: HeldWriteRows>(in rows: inout Rows) throws -> Int {
        guard rows.signer != nil, try !rows.ownWritesSigned() else { return 0 }
        let node = try rows.ownNode()
        var signed = 0
        for writer in try rows.writerRows() where writer.id.isWriter(of: node) {
            let ranges = try rows.signedRanges(ofWriterRow: writer.row).sorted { $0.lowerBound < $1.lowerBound }
            let unsigned = try rows.indexedVersions(ofWriterRow: writer.row)
                .filter { !covered($0.counter, by: ranges) }
                .sorted { ($0.counter, $0.field) < ($1.counter, $1.field) }
            guard !unsigned.isEmpty else { continue }
            let rowsInOrder = Array(Set(unsigned.map(\.field))).sorted()
            let keys = Dictionary(uniqueKeysWithValues: zip(rowsInOrder, try rows.fieldKeys(ofRows: Set(rowsInOrder))))
            var log = RunLog(ordered: true)
            for version in unsigned {
                guard let key = keys[version.field], let item = try rows.findItem(key.item),
                    let field = try rows.loadField(item: item.row, name: key.field)
                else { continue }
                let dot = Dot(node: writer.id, counter: version.counter)
                guard field.state.versions.contains(where: { $0.dot == dot }) else { continue }
                log.note(dot, item: key.item, field: key.field, in: field.state)
                signed += 1
            }
            try rows.sign(log)
        }
        try rows.markOwnWritesSigned()
        return signed
    }

    /// Whether `counter` lies in one of `ranges` (sorted by their start, apart).
    static func covered(_ counter: UInt64, by ranges: [ClosedRange<UInt64>]) -> Bool {
        var (low, high) = (0, ranges.count)
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].lowerBound <= counter { low = middle + 1 } else { high = middle }
        }
        return low > 0 && ranges[low - 1].contains(counter)
    }
}
