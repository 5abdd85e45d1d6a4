import Foundation
import GRDB
import LansyncCore
import LansyncReplica
import Synchronization

/// How the replica file stores a field state (the `field.state` column): a format byte, then
/// ``FieldStateCodec``'s structure in one of these forms.
///
/// - Format 1 (schemas v1–v7): ``AbsoluteForm``, every node id in full (16 bytes), twice per field
///   at least (its context and its version's dot).
/// - Format 2 (schema v7): ``StoredForm``, a node as its `node` row (usually one byte) and a dot
///   relative to the field's context (usually one byte): about 30 bytes less per field.
/// - Format 3: the absolute form with the removal log (``FieldState/encoded``; not written here).
/// - Format 4 (written since v8): format 2 followed by the removal log and its horizon, which
///   field deltas need;
/// - Format 5 (written since v8): format 2 for a state whose removal log and horizon are empty
///   (most fields), so they cost no byte.
///
/// All are read, so a file needs no rewrite: rows move to format 4 or 5 as they are written again. A
/// state read from format 1 or 2 has no log; its horizon is its whole context, so deltas of it go
/// only to peers that had seen all of it.
enum StoredState {
    static let absoluteFormat: UInt8 = 1
    static let compactFormat: UInt8 = 2
    static let compactLoggedFormat: UInt8 = 4
    static let compactUnloggedFormat: UInt8 = 5

    /// The state in format 4, or 5 when its log is empty; `rows` must hold every node the state
    /// names.
    /// `recent`, a node's row the caller looked up last, is checked before `rows`.
    static func encode(_ state: FieldState, rows: [NodeID: Int64], recent: (id: NodeID, row: Int64)? = nil) -> [UInt8] {
        var w = ByteWriter()
        let log = FieldStateCodec.RemovalLog.fitting(state)
        w.byte(log == .empty ? compactUnloggedFormat : compactLoggedFormat)
        var form = StoredForm(rows: rows, recent: recent)
        FieldStateCodec.write(state, to: &w, form: &form, removalLog: log)
        return w.bytes
    }

    /// Reads either format; format 2's node rows are looked up through `nodes` (and `db` for a
    /// row it has not seen yet).
    static func decode(_ bytes: [UInt8], db: Database, nodes: NodeRows) throws(DecodingError) -> FieldState {
        guard let format = bytes.first else { throw DecodingError("empty field state", offset: 0) }
        let log: FieldStateCodec.RemovalLog
        switch format {
        case compactFormat: log = .absent
        case compactLoggedFormat: log = .present
        case compactUnloggedFormat: log = .empty
        default: return try FieldState(decoding: bytes)
        }
        var r = ByteReader(bytes)
        _ = try r.byte()
        let state = try FieldStateCodec.read(
            from: &r,
            form: StoredForm(lookup: { nodes.id(ofRow: $0, db: db) }),
            removalLog: log
        )
        guard r.isAtEnd else { throw r.fail("trailing bytes after a field state") }
        return state
    }

    /// Every node a state names: its context's, and those of versions an overrule refused.
    static func nodes(of state: FieldState) -> [NodeID] { state.namedNodes }
}

/// Format 2's spelling (``StoredState``): a node is its row in table `node`.
struct StoredForm: IndexedNodeForm {
    var rows: [NodeID: Int64] = [:]
    /// One row checked before `rows`: most states name one node, the one written last.
    var recent: (id: NodeID, row: Int64)?
    var lookup: (UInt64) -> NodeID? = { _ in nil }

    func write(_ node: NodeID, to w: inout ByteWriter) {
        if let recent, recent.id == node { return w.varint(UInt64(recent.row)) }
        // The caller resolved every node of the state to its row before encoding.
        guard let row = rows[node] else { preconditionFailure("node \(node) has no row") }
        w.varint(UInt64(row))
    }

    func write(_ timestamp: HLCTimestamp, of dot: Dot, to w: inout ByteWriter) { w.varint(timestamp.rawValue) }

    func readNode(from r: inout ByteReader) throws(DecodingError) -> NodeID {
        let row = try r.varint()
        guard let node = lookup(row) else { throw r.fail("node row \(row) is not in table node") }
        return node
    }

    func readTimestamp(from r: inout ByteReader, of dot: Dot) throws(DecodingError) -> HLCTimestamp {
        HLCTimestamp(rawValue: try r.varint())
    }
}

/// Which node each `node` row names, as far as this process has needed to know. A row, once
/// written, always names the same node (rows are only ever added), so what is cached stays true.
final class NodeRows: Sendable {
    private let known = Mutex<[UInt64: NodeID]>([:])
    /// Node ids a read found a committed row for (``WriterCheck``): a row is never removed, so
    /// they stay known, and a peer's batch naming only them needs no look-up.
    private let knownIDs = Mutex<Set<NodeID>>([])

    init() {}

    func isKnown(_ id: NodeID) -> Bool { knownIDs.withLock { $0.contains(id) } }

    /// Only ids read from committed rows: a row written by a transaction that may still roll
    /// back must not be taken as known.
    func noteCommitted(_ ids: some Sequence<NodeID>) { knownIDs.withLock { $0.formUnion(ids) } }

    func id(ofRow row: UInt64, db: Database) -> NodeID? {
        if let node = known.withLock({ $0[row] }) { return node }
        guard row <= UInt64(Int64.max),
            let text = try? String.fetchOne(db, sql: "SELECT node_id FROM node WHERE id = ?", arguments: [Int64(row)]),
            let node = NodeID(text: text)
        else { return nil }
        known.withLock { $0[row] = node }
        return node
    }
}
