import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

// Local edits: each one transaction, with its own dot.
extension ReplicaStore {
    /// Performs one local edit in one transaction; returns its dot.
    @discardableResult
    public func apply(_ edit: ItemEdit, to id: ItemID, wallMilliseconds: UInt64) throws(StoreError) -> Dot {
        try apply([(id, edit)], wallMilliseconds: wallMilliseconds)[0]
    }

    /// Performs several local edits in one transaction, each with its own dot: all or none.
    /// `progress` is called with the number of edits done so far.
    @discardableResult
    public func apply(
        _ edits: [(ItemID, ItemEdit)],
        wallMilliseconds: UInt64,
        progress: ((Int) -> Void)? = nil
    ) throws(StoreError) -> [Dot] {
        var dots: [Dot] = []
        do {
            try applyEdits(wallMilliseconds: wallMilliseconds) { session in
                for (id, edit) in edits {
                    dots.append(try session.apply(edit, to: id))
                    progress?(dots.count)
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw Self.mapError(error, path: path)
        }
        return dots
    }

    /// Performs local edits that `body` feeds one at a time through an ``EditSession``, all in
    /// one transaction: all are committed, or none (when `body` or an edit throws). Each edit is
    /// written as it comes, so memory stays bounded however many there are: `import` streams its
    /// input through here.
    ///
    /// Errors of `body` reach the caller as they are; the store's own are ``StoreError``s.
    public func applyEdits(
        wallMilliseconds: UInt64,
        _ body: (inout EditSession) throws -> Void
    ) throws {
        try write { tx, me in
            if let why = try Self.readOnlyReason(db: tx.db) { throw StoreError.readOnly(why: why) }
            let writer = try tx.claimWriter(lease: lease, name: me.nodeName)
            var session = EditSession(
                rows: SQLiteRows(tx: tx, lease: lease, nodeName: me.nodeName, signer: signing.current),
                writer: writer,
                wallMilliseconds: wallMilliseconds
            )
            try body(&session)
            guard session.count > 0 else { return .rollback(()) }
            try session.finish()
            tx = session.rows.tx
            try tx.setCounter(of: writer.row, to: session.counter)
            tx.writerMarker = (writer.id, try tx.countChange())
            try tx.saveClock()
            return .commit(())
        }
    }
}
