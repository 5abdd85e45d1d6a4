public import LansyncCore

extension WriterFolding {
    /// Which writers a replica knows are retired, for ``WriterFolding/folds(vector:stable:folded:isRetired:)``,
    /// in every store: every writer of its own node (`node`; `own`, the writers it started) but
    /// the `current` one, and every writer of a revoked member. A writer whose counter moved
    /// since `previous` (the vector as the last round read it; `vector`, now) waits for a quiet
    /// round. A forgotten member's writers do not fold: forgetting is this machine's judgement,
    /// and the member may still be writing elsewhere.
    public static func retirement(
        node: NodeID,
        current: NodeID,
        own: Set<NodeID>,
        revoked: RevokedWriters,
        vector: VersionVector,
        unchangedSince previous: VersionVector?
    ) -> (NodeID) -> Bool {
        { writer in
            guard writer != current, previous.map({ $0[writer] == vector[writer] }) ?? true else { return false }
            return own.contains(writer) || writer.isWriter(of: node) || revoked.names(writer)
        }
    }
}
